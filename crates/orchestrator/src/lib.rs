//! orchestrator (see DESIGN.md).
