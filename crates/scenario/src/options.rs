//! The options a server kind declares in its manifest and the values a scenario gives them:
//! what a manifest and a plan both speak of.

/// One scenario option of a kind: a key its `[[server]]` tables may set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionDecl {
    pub typ: OptionType,
    /// The environment variable the option's value is passed in.
    pub env: String,
    /// A server of this kind must set it.
    pub required: bool,
    /// The value when a server does not set it.
    pub default: Option<OptionValue>,
    /// Sizes only: the value must exceed the scenario's largest document.
    pub exceeds_largest_document: bool,
    /// Sizes only: the value must be below the server's memory limit.
    pub below_memory: bool,
    /// What it is, for errors and `benchctl servers`.
    pub help: String,
}

/// The type of a kind's option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionType {
    /// The name of another server of the scenario, started first; passed as its `HOST:PORT`.
    Server,
    /// A byte count (`468`, `"256m"`); passed as whole KiB (`262144k`).
    Size,
    Integer,
    String,
    /// Passed as `true` or `false`.
    Bool,
}

impl OptionType {
    pub fn as_str(self) -> &'static str {
        match self {
            OptionType::Server => "server",
            OptionType::Size => "size",
            OptionType::Integer => "integer",
            OptionType::String => "string",
            OptionType::Bool => "bool",
        }
    }
}

/// The value of one of a kind's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionValue {
    /// Another server of the scenario (by index into [`Plan::servers`]), started first; the
    /// server gets its address.
    Server(usize),
    /// A byte count.
    Size(u64),
    Integer(i64),
    Text(String),
    Bool(bool),
}
