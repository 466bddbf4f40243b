//! The HTTP `Range` request header with Amazon S3 semantics.
//!
//! S3 honours exactly one `bytes` range. Anything it cannot parse (another unit, several ranges,
//! `bytes=5-2`, junk) is *ignored*: the whole object is served with 200, so [`parse_range`]
//! returns `None` rather than an error. Only a well-formed range that misses the object is an
//! error (416), reported by [`resolve`].

use std::fmt;
use std::ops::Range;

/// One parsed byte range, before the object size is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRange {
    /// `bytes=a-b`: bytes a through b, both inclusive (b >= a).
    FromTo(u64, u64),
    /// `bytes=a-`: from byte a to the end.
    From(u64),
    /// `bytes=-n`: the last n bytes.
    Suffix(u64),
}

/// Parses a `Range` header value; `None` means "no usable range: serve the whole object".
///
/// Strict on purpose: no whitespace, no signs, only the lowercase `bytes` unit, exactly one
/// range. Being lenient where S3 is strict would turn a 200 into a 206 the client did not expect.
pub fn parse_range(header: &str) -> Option<ByteRange> {
    let spec = header.strip_prefix("bytes=")?;
    let (first, last) = spec.split_once('-')?;
    match (first.is_empty(), last.is_empty()) {
        (true, true) => None,
        (true, false) => Some(ByteRange::Suffix(parse_digits(last)?)),
        (false, true) => Some(ByteRange::From(parse_digits(first)?)),
        (false, false) => {
            let (a, b) = (parse_digits(first)?, parse_digits(last)?);
            (b >= a).then_some(ByteRange::FromTo(a, b))
        }
    }
}

/// A non-empty run of ASCII digits as a u64; anything else, or overflow, is `None`.
fn parse_digits(s: &str) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.bytes().try_fold(0u64, |acc, c| {
        let digit = u64::from(c.checked_sub(b'0').filter(|d| *d <= 9)?);
        acc.checked_mul(10)?.checked_add(digit)
    })
}

/// A well-formed range that selects no byte of the object: S3's 416 `InvalidRange`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeError {
    /// No byte of the object is in the range.
    Unsatisfiable,
}

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RangeError::Unsatisfiable => f.write_str("the requested range is not satisfiable"),
        }
    }
}

impl std::error::Error for RangeError {}

/// The half-open byte range `[start, end)` of an object of `size` bytes to serve.
///
/// The result is non-empty for every `size > 0`. On a zero-byte object every range starting at
/// an offset is unsatisfiable (416, as S3 answers `bytes=0-` there), but a suffix `bytes=-n`
/// with n > 0 is satisfiable by RFC 9110 and S3 answers it with 200 and an empty body; that one
/// case returns `Ok(0..0)`, which the caller must serve as a plain 200 without `Content-Range`
/// (no valid `Content-Range` describes zero bytes).
pub fn resolve(range: ByteRange, size: u64) -> Result<Range<u64>, RangeError> {
    match range {
        ByteRange::FromTo(a, b) if a < size => Ok(a..b.saturating_add(1).min(size)),
        ByteRange::From(a) if a < size => Ok(a..size),
        ByteRange::Suffix(n) if n > 0 => Ok(size.saturating_sub(n)..size),
        _ => Err(RangeError::Unsatisfiable),
    }
}

/// The `Content-Range` value of a 206 answer: `bytes first-last/size`, last inclusive.
///
/// For an empty range (only possible for a zero-byte object) there is no valid value; the
/// unsatisfied form is returned rather than the malformed `bytes 0--1/0`.
pub fn content_range(r: &Range<u64>, size: u64) -> String {
    if r.is_empty() {
        return unsatisfied_content_range(size);
    }
    format!("bytes {}-{}/{}", r.start, r.end - 1, size)
}

/// The `Content-Range` value of a 416 answer: `bytes */size`.
pub fn unsatisfied_content_range(size: u64) -> String {
    format!("bytes */{size}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_valid_headers() {
        let cases = [
            ("bytes=0-0", ByteRange::FromTo(0, 0)),
            ("bytes=0-499", ByteRange::FromTo(0, 499)),
            ("bytes=500-999", ByteRange::FromTo(500, 999)),
            ("bytes=007-010", ByteRange::FromTo(7, 10)),
            ("bytes=9500-", ByteRange::From(9500)),
            ("bytes=0-", ByteRange::From(0)),
            ("bytes=-500", ByteRange::Suffix(500)),
            ("bytes=-0", ByteRange::Suffix(0)),
            (
                "bytes=0-18446744073709551615",
                ByteRange::FromTo(0, u64::MAX),
            ),
            ("bytes=18446744073709551615-", ByteRange::From(u64::MAX)),
        ];
        for (header, want) in cases {
            assert_eq!(parse_range(header), Some(want), "{header:?}");
        }
    }

    #[test]
    fn ignores_what_s3_ignores() {
        let cases = [
            "",
            "bytes",
            "bytes=",
            "bytes=-",
            "bytes=5-2",
            "bytes=1-0",
            "bytes=0-1,3-4",
            "bytes=0-1,",
            "bytes=--1",
            "bytes=1--2",
            "bytes=1-2-3",
            "bytes=+1-2",
            "bytes=1-+2",
            "bytes=a-b",
            "bytes=0x1-2",
            "bytes= 0-1",
            "bytes=0-1 ",
            " bytes=0-1",
            "bytes =0-1",
            "bytes=0 -1",
            "Bytes=0-1",
            "BYTES=0-1",
            "items=0-1",
            "0-1",
            "bytes=18446744073709551616-",
            "bytes=0-18446744073709551616",
            "bytes=-18446744073709551616",
            "bytes=\u{0661}-2",
            "bytes=1\u{0}-2",
        ];
        for header in cases {
            assert_eq!(parse_range(header), None, "{header:?}");
        }
    }

    #[test]
    fn resolves_like_s3() {
        use ByteRange::*;
        let ok = [
            (FromTo(0, 0), 10, 0..1),
            (FromTo(0, 9), 10, 0..10),
            (FromTo(2, 5), 10, 2..6),
            (FromTo(9, 100), 10, 9..10),
            (FromTo(3, u64::MAX), 10, 3..10),
            (From(0), 10, 0..10),
            (From(9), 10, 9..10),
            (Suffix(1), 10, 9..10),
            (Suffix(10), 10, 0..10),
            (Suffix(11), 10, 0..10),
            (Suffix(u64::MAX), 10, 0..10),
            (Suffix(5), 0, 0..0),
        ];
        for (range, size, want) in ok {
            assert_eq!(resolve(range, size), Ok(want), "{range:?} of {size}");
        }
        let bad = [
            (FromTo(10, 20), 10),
            (FromTo(0, 0), 0),
            (From(10), 10),
            (From(u64::MAX), 10),
            (From(0), 0),
            (Suffix(0), 10),
            (Suffix(0), 0),
        ];
        for (range, size) in bad {
            assert_eq!(
                resolve(range, size),
                Err(RangeError::Unsatisfiable),
                "{range:?} of {size}"
            );
        }
    }

    #[test]
    fn formats_content_range() {
        assert_eq!(content_range(&(0..1), 10), "bytes 0-0/10");
        assert_eq!(content_range(&(2..6), 10), "bytes 2-5/10");
        assert_eq!(content_range(&(0..10), 10), "bytes 0-9/10");
        assert_eq!(content_range(&(0..0), 0), "bytes */0");
        assert_eq!(unsatisfied_content_range(42), "bytes */42");
        assert_eq!(
            RangeError::Unsatisfiable.to_string(),
            "the requested range is not satisfiable"
        );
    }

    fn any_range() -> impl Strategy<Value = ByteRange> {
        prop_oneof![
            (any::<u64>(), any::<u64>()).prop_map(|(a, b)| ByteRange::FromTo(a.min(b), a.max(b))),
            any::<u64>().prop_map(ByteRange::From),
            any::<u64>().prop_map(ByteRange::Suffix),
            (0u64..64, 0u64..64).prop_map(|(a, b)| ByteRange::FromTo(a.min(b), a.max(b))),
            (0u64..64).prop_map(ByteRange::From),
            (0u64..64).prop_map(ByteRange::Suffix),
        ]
    }

    fn header_of(range: ByteRange) -> String {
        match range {
            ByteRange::FromTo(a, b) => format!("bytes={a}-{b}"),
            ByteRange::From(a) => format!("bytes={a}-"),
            ByteRange::Suffix(n) => format!("bytes=-{n}"),
        }
    }

    proptest! {
        #[test]
        fn resolved_range_is_inside_and_non_empty(
            range in any_range(),
            size in prop_oneof![1u64..100, any::<u64>().prop_map(|s| s.max(1))],
        ) {
            if let Ok(r) = resolve(range, size) {
                prop_assert!(r.start < r.end);
                prop_assert!(r.end <= size);
                let text = content_range(&r, size);
                prop_assert_eq!(text, format!("bytes {}-{}/{}", r.start, r.end - 1, size));
            }
        }

        #[test]
        fn resolves_exactly_when_s3_serves(range in any_range(), size in 0u64..100) {
            let satisfiable = match range {
                ByteRange::FromTo(a, _) | ByteRange::From(a) => a < size,
                ByteRange::Suffix(n) => n > 0,
            };
            prop_assert_eq!(resolve(range, size).is_ok(), satisfiable);
        }

        #[test]
        fn header_round_trips(range in any_range()) {
            prop_assert_eq!(parse_range(&header_of(range)), Some(range));
        }

        #[test]
        fn never_panics_on_junk(header in ".{0,40}") {
            let _ = parse_range(&header);
        }

        #[test]
        fn never_panics_on_near_misses(header in "bytes=[0-9,+ -]{0,30}") {
            if let Some(range) = parse_range(&header) {
                prop_assert_eq!(header_of(range).len() <= header.len(), true);
            }
        }
    }
}
