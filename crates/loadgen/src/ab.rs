//! ab text output (in progress).
