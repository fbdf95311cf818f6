//! scenario (see DESIGN.md).
