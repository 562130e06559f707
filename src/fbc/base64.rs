//! Base64 as Go's `encoding/json` reads `[]byte` fields: `base64.StdEncoding` (standard
//! alphabet, padding required), line breaks (`\r`, `\n`) ignored, non-zero trailing bits
//! accepted. FBC keeps bundle objects and icons as their base64 text; this module checks that
//! text at load time and decodes it when someone asks for the bytes.

use base64::Engine as _;
use base64::engine::general_purpose::GeneralPurpose;
use base64::engine::{DecodePaddingMode, GeneralPurposeConfig};

/// Go's message for bad base64: `illegal base64 data at input byte N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("illegal base64 data at input byte {offset}")]
pub struct Base64Error {
    /// Byte offset (in the text as written) where the data stops being valid.
    pub offset: usize,
}

const GO_STD: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);

fn is_alphabet(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'+' || b == b'/'
}

/// Checks `text` the way Go's decoder would, without decoding it.
pub fn validate(text: &str) -> Result<(), Base64Error> {
    let bytes = text.as_bytes();
    if memchr::memchr2(b'\r', b'\n', bytes).is_some() {
        return validate_with_line_breaks(bytes);
    }
    // Fast path: one pass that the compiler vectorises, then the exact check on failure.
    let body_len = bytes.len()
        - bytes
            .iter()
            .rev()
            .take(2)
            .take_while(|&&b| b == b'=')
            .count();
    let all_alphabet = bytes[..body_len]
        .chunks(64)
        .all(|chunk| chunk.iter().fold(true, |ok, &b| ok & is_alphabet(b)));
    if all_alphabet && bytes.len().is_multiple_of(4) {
        return Ok(());
    }
    validate_with_line_breaks(bytes)
}

/// The exact (slow) check, skipping line breaks.
fn validate_with_line_breaks(bytes: &[u8]) -> Result<(), Base64Error> {
    let mut symbols = 0usize;
    let mut padding = 0usize;
    let mut last = 0usize;
    for (offset, &b) in bytes.iter().enumerate() {
        match b {
            b'\r' | b'\n' => continue,
            b'=' => {
                // Padding may only complete the last quantum, after at least two symbols.
                if symbols % 4 < 2 || padding >= 2 {
                    return Err(Base64Error { offset });
                }
                padding += 1;
                symbols += 1;
            }
            b if is_alphabet(b) && padding == 0 => symbols += 1,
            _ => return Err(Base64Error { offset }),
        }
        last = offset;
    }
    if !symbols.is_multiple_of(4) {
        return Err(Base64Error {
            offset: if symbols == 0 { 0 } else { last + 1 },
        });
    }
    Ok(())
}

/// Decodes base64 text that [`validate`] accepted (or reports where it is invalid).
pub fn decode(text: &str) -> Result<Vec<u8>, Base64Error> {
    validate(text)?;
    let result = if memchr::memchr2(b'\r', b'\n', text.as_bytes()).is_some() {
        let compact: Vec<u8> = text
            .bytes()
            .filter(|b| !matches!(b, b'\r' | b'\n'))
            .collect();
        GO_STD.decode(compact)
    } else {
        GO_STD.decode(text)
    };
    result.map_err(|e| Base64Error {
        offset: match e {
            base64::DecodeError::InvalidByte(offset, _)
            | base64::DecodeError::InvalidLastSymbol { offset, .. } => offset,
            _ => text.len(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_go_std_encoding_accepts() {
        for ok in [
            "",
            "Zm9v",
            "Zm8=",
            "Zg==",
            "Zm9v\nYmFy",
            "Zm9v\r\nYg==\n",
            "Zh==",
        ] {
            assert_eq!(validate(ok), Ok(()), "{ok:?}");
            assert!(decode(ok).is_ok(), "{ok:?}");
        }
        assert_eq!(decode("Zm9vYmFy").unwrap(), b"foobar");
        assert_eq!(decode("Zm9v\nYmFy").unwrap(), b"foobar");
    }

    #[test]
    fn rejects_with_the_offending_byte() {
        assert_eq!(validate("Zm9"), Err(Base64Error { offset: 3 }));
        assert_eq!(validate("Zm9v!"), Err(Base64Error { offset: 4 }));
        assert_eq!(validate("Z==="), Err(Base64Error { offset: 1 }));
        assert_eq!(validate("Zm=v"), Err(Base64Error { offset: 3 }));
        assert_eq!(validate("Zm9v Zm9v"), Err(Base64Error { offset: 4 }));
        assert_eq!(validate("Zg==Zg=="), Err(Base64Error { offset: 4 }));
        assert_eq!(
            validate("Zm9v-_"),
            Err(Base64Error { offset: 4 }),
            "URL alphabet is not StdEncoding"
        );
    }
}
