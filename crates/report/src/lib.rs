//! report (see DESIGN.md).
