//! The bounds every histogram of a run shares, and the text form results files keep them in.
//!
//! A leaf: the recorder, the timeline and the JSON report all make or read histograms, and
//! none of them needs the others for it.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::{Counter, Histogram};

/// Highest value a histogram tracks: one hour in microseconds. Larger values saturate.
pub const HIST_MAX_US: u64 = 3_600_000_000;
/// Significant digits kept by every histogram.
pub const HIST_SIGFIG: u8 = 3;

/// A histogram with the bounds every histogram of a run shares, so that any two merge.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_US, HIST_SIGFIG).expect("static histogram bounds")
}

/// Why a stored histogram could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum HistogramDecodeError {
    #[error("histogram is not valid base64 (was the results file edited?): {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("histogram is not a V2 deflate HdrHistogram (was the results file edited?): {0}")]
    Deserialize(#[from] hdrhistogram::serialization::DeserializeError),
}

/// V2 deflate serialization, base64 (standard alphabet, padded): the encoding HdrHistogram's
/// other implementations read, so results files can be checked with their tools too.
pub fn encode_histogram<T: Counter>(h: &Histogram<T>) -> String {
    let mut buf = Vec::new();
    // Writing into a Vec cannot fail, and u64 counts always fit the V2 format, so an error here
    // would be a bug in the serializer rather than a condition to report.
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .expect("serializing a histogram into memory");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// The inverse of [`encode_histogram`].
pub fn decode_histogram(s: &str) -> Result<Histogram<u64>, HistogramDecodeError> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(s)?;
    Ok(Deserializer::new().deserialize(&mut bytes.as_slice())?)
}
