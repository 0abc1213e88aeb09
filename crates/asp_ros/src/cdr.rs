//! Plain CDR (little endian, no encapsulation header), as RustDDS puts it on the wire.
//! Used to check that every message type survives the wire format, and by the
//! transcoding of ros2-client's own action wrapper types into ours.

use byteorder::LittleEndian;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Serialises `value` to little-endian CDR.
pub fn to_bytes<T: Serialize>(value: &T) -> Result<Vec<u8>, String> {
    rustdds::serialization::to_vec::<T, LittleEndian>(value).map_err(|e| e.to_string())
}

/// Deserialises a value from little-endian CDR, requiring that every byte is used
/// (up to the final alignment padding).
pub fn from_bytes<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let (value, used) =
        rustdds::serialization::from_bytes::<T, LittleEndian>(bytes).map_err(|e| e.to_string())?;
    if bytes.len().saturating_sub(used) >= 4 {
        return Err(format!(
            "{} trailing bytes after the value",
            bytes.len() - used
        ));
    }
    Ok(value)
}

/// Re-encodes a value as another type with the same CDR layout.
pub fn transcode<A: Serialize, B: DeserializeOwned>(value: &A) -> Result<B, String> {
    from_bytes(&to_bytes(value)?)
}
