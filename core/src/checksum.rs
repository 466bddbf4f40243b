//! Streaming CRC32 / CRC32C / CRC64NVME for S3's `x-amz-checksum-*` headers, their base64 form,
//! and CRC combination for multipart `FULL_OBJECT` checksums.
//!
//! The `crc` instances are `static` slice-by-16 tables built at compile time, so no call ever
//! builds a table.

use crc::{Algorithm, Crc, Digest, Table, CRC_32_ISCSI, CRC_32_ISO_HDLC, CRC_64_NVME};
use std::fmt;

/// The fastest implementation `crc` 3.4 offers: 16 lookup tables of 256 entries.
type Fast = Table<16>;

static CRC32: Crc<u32, Fast> = Crc::<u32, Fast>::new(&CRC_32_ISO_HDLC);
static CRC32C: Crc<u32, Fast> = Crc::<u32, Fast>::new(&CRC_32_ISCSI);
static CRC64NVME: Crc<u64, Fast> = Crc::<u64, Fast>::new(&CRC_64_NVME);

/// The CRC checksums S3 accepts in `x-amz-checksum-*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum S3Checksum {
    /// CRC-32 (IEEE / ISO-HDLC, as zlib).
    Crc32,
    /// CRC-32C (Castagnoli / iSCSI).
    Crc32c,
    /// CRC-64/NVME, S3's default for new uploads.
    Crc64Nvme,
}

impl S3Checksum {
    const ALL: [S3Checksum; 3] = [S3Checksum::Crc32, S3Checksum::Crc32c, S3Checksum::Crc64Nvme];

    /// The name S3 uses (`x-amz-checksum-algorithm`, `ChecksumAlgorithm`).
    pub fn name(self) -> &'static str {
        match self {
            S3Checksum::Crc32 => "CRC32",
            S3Checksum::Crc32c => "CRC32C",
            S3Checksum::Crc64Nvme => "CRC64NVME",
        }
    }

    /// Parses an algorithm name, ignoring case as clients send both `crc32c` and `CRC32C`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.name().eq_ignore_ascii_case(name))
    }

    /// Bytes in the raw digest (before base64).
    pub fn digest_len(self) -> usize {
        match self {
            S3Checksum::Crc32 | S3Checksum::Crc32c => 4,
            S3Checksum::Crc64Nvme => 8,
        }
    }

    fn width_and_algorithm(self) -> (u32, Params) {
        match self {
            S3Checksum::Crc32 => (32, Params::of32(CRC32.algorithm)),
            S3Checksum::Crc32c => (32, Params::of32(CRC32C.algorithm)),
            S3Checksum::Crc64Nvme => (64, Params::of64(CRC64NVME.algorithm)),
        }
    }
}

#[derive(Clone)]
enum State {
    W32(Digest<'static, u32, Fast>),
    W64(Digest<'static, u64, Fast>),
}

/// A checksum computed over data that arrives in pieces.
#[derive(Clone)]
pub struct StreamingChecksum {
    kind: S3Checksum,
    state: State,
}

impl fmt::Debug for StreamingChecksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamingChecksum")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl StreamingChecksum {
    /// Starts a checksum of the empty input.
    pub fn new(kind: S3Checksum) -> Self {
        let state = match kind {
            S3Checksum::Crc32 => State::W32(CRC32.digest()),
            S3Checksum::Crc32c => State::W32(CRC32C.digest()),
            S3Checksum::Crc64Nvme => State::W64(CRC64NVME.digest()),
        };
        Self { kind, state }
    }

    /// Which algorithm this is.
    pub fn kind(&self) -> S3Checksum {
        self.kind
    }

    /// Feeds the next piece of data.
    pub fn update(&mut self, bytes: &[u8]) {
        match &mut self.state {
            State::W32(d) => d.update(bytes),
            State::W64(d) => d.update(bytes),
        }
    }

    /// The big-endian digest bytes, which is what S3 base64-encodes in its headers.
    pub fn finalize(self) -> Vec<u8> {
        match self.state {
            State::W32(d) => d.finalize().to_be_bytes().to_vec(),
            State::W64(d) => d.finalize().to_be_bytes().to_vec(),
        }
    }
}

/// One-shot checksum of `data`: big-endian digest bytes.
pub fn checksum(kind: S3Checksum, data: &[u8]) -> Vec<u8> {
    let mut state = StreamingChecksum::new(kind);
    state.update(data);
    state.finalize()
}

/// The checksum of A||B from the checksums of A and B and B's length, or `None` when a digest
/// is not `kind.digest_len()` bytes. Lets a multipart upload's `FULL_OBJECT` CRC be built from
/// the parts' CRCs without rereading any data.
///
/// With the register update linear over GF(2): crc(A||B) = shift(crc(A) ^ xorout ^ init, |B|)
/// ^ crc(B), where shift multiplies by x^(8|B|) mod P (zlib's `crc32_combine`, by
/// square-and-multiply on x^8 instead of a matrix, generalised to any reflected width).
pub fn combine(kind: S3Checksum, crc_a: &[u8], crc_b: &[u8], len_b: u64) -> Option<Vec<u8>> {
    let len = kind.digest_len();
    if crc_a.len() != len || crc_b.len() != len {
        return None;
    }
    let (width, params) = kind.width_and_algorithm();
    let (a, b) = (from_be(crc_a), from_be(crc_b));
    let field = Gf2Poly::new(width, params.poly);
    let shifted = field.mul(a ^ params.xorout ^ params.init, field.x_pow_8n(len_b));
    let combined = (shifted ^ b).to_be_bytes();
    Some(combined[8 - len..].to_vec())
}

fn from_be(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |acc, &b| (acc << 8) | u64::from(b))
}

/// The parameters `combine` needs, widened to u64.
struct Params {
    poly: u64,
    init: u64,
    xorout: u64,
}

impl Params {
    fn of32(alg: &Algorithm<u32>) -> Self {
        debug_assert!(alg.refin && alg.refout);
        Self {
            poly: alg.poly.into(),
            init: alg.init.into(),
            xorout: alg.xorout.into(),
        }
    }

    fn of64(alg: &Algorithm<u64>) -> Self {
        debug_assert!(alg.refin && alg.refout);
        Self {
            poly: alg.poly,
            init: alg.init,
            xorout: alg.xorout,
        }
    }
}

/// Polynomials mod P in the reflected bit order of a reflected CRC: the top bit of the
/// `width`-bit register is x^0 and bit 0 is x^(width-1).
struct Gf2Poly {
    /// The register's x^0 bit.
    one: u64,
    /// P without its x^width term, reflected.
    poly: u64,
}

impl Gf2Poly {
    fn new(width: u32, normal_poly: u64) -> Self {
        Self {
            one: 1 << (width - 1),
            poly: normal_poly.reverse_bits() >> (64 - width),
        }
    }

    /// a * b mod P (zlib's `multmodp`).
    fn mul(&self, a: u64, mut b: u64) -> u64 {
        let mut product = 0;
        let mut bit = self.one;
        while bit != 0 {
            if a & bit != 0 {
                product ^= b;
            }
            b = self.times_x(b);
            bit >>= 1;
        }
        product
    }

    fn times_x(&self, b: u64) -> u64 {
        if b & 1 != 0 {
            (b >> 1) ^ self.poly
        } else {
            b >> 1
        }
    }

    /// x^(8n) mod P: the operator that appends n zero bytes to a register.
    fn x_pow_8n(&self, mut n: u64) -> u64 {
        let mut result = self.one;
        let mut square = self.one >> 8; // x^8
        while n != 0 {
            if n & 1 != 0 {
                result = self.mul(result, square);
            }
            square = self.mul(square, square);
            n >>= 1;
        }
        result
    }
}

const BASE64_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with `=` padding, as S3 puts checksums in headers.
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= group.len() {
                let index = (n >> (18 - 6 * i)) & 0x3f;
                out.push(char::from(BASE64_ALPHABET[index as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Strict standard base64: length a multiple of 4, padding only at the end, no whitespace, and
/// unused trailing bits zero, so every byte string has exactly one accepted encoding.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if bytes.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let groups = bytes.len() / 4;
    for (g, quad) in bytes.chunks_exact(4).enumerate() {
        let last = g + 1 == groups;
        decode_quad(quad, last, &mut out)?;
    }
    Some(out)
}

fn decode_quad(quad: &[u8], last: bool, out: &mut Vec<u8>) -> Option<()> {
    let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
    if pad > 2 || (pad > 0 && !last) {
        return None;
    }
    let mut n = 0u32;
    for &c in &quad[..4 - pad] {
        n = (n << 6) | u32::from(base64_value(c)?);
    }
    n <<= 6 * pad;
    let produced = 3 - pad;
    let unused_bits = n & ((1 << (8 * pad)) - 1);
    if unused_bits != 0 {
        return None;
    }
    out.extend_from_slice(&n.to_be_bytes()[1..1 + produced]);
    Some(())
}

fn base64_value(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Bit-at-a-time reflected CRC straight from the definition, independent of `crc`'s tables.
    fn reference(kind: S3Checksum, data: &[u8]) -> Vec<u8> {
        let (width, params) = kind.width_and_algorithm();
        let poly = params.poly.reverse_bits() >> (64 - width);
        let mask = u64::MAX >> (64 - width);
        let mut reg = params.init & mask;
        for &byte in data {
            reg ^= u64::from(byte);
            for _ in 0..8 {
                reg = if reg & 1 != 0 {
                    (reg >> 1) ^ poly
                } else {
                    reg >> 1
                };
            }
        }
        let value = (reg ^ params.xorout) & mask;
        value.to_be_bytes()[8 - kind.digest_len()..].to_vec()
    }

    fn b64(kind: S3Checksum, data: &[u8]) -> String {
        base64_encode(&checksum(kind, data))
    }

    #[test]
    fn standard_check_values() {
        let data = b"123456789";
        assert_eq!(
            checksum(S3Checksum::Crc32, data),
            0xCBF4_3926u32.to_be_bytes()
        );
        assert_eq!(
            checksum(S3Checksum::Crc32c, data),
            0xE306_9283u32.to_be_bytes()
        );
        assert_eq!(
            checksum(S3Checksum::Crc64Nvme, data),
            0xAE8B_1486_0A79_9888u64.to_be_bytes()
        );
    }

    #[test]
    fn known_s3_header_values() {
        assert_eq!(b64(S3Checksum::Crc32, b""), "AAAAAA==");
        assert_eq!(b64(S3Checksum::Crc32c, b""), "AAAAAA==");
        assert_eq!(b64(S3Checksum::Crc64Nvme, b""), "AAAAAAAAAAA=");
        assert_eq!(b64(S3Checksum::Crc32, b"hello world"), "DUoRhQ==");
        assert_eq!(b64(S3Checksum::Crc32c, b"hello world"), "yZRlqg==");
        assert_eq!(
            checksum(S3Checksum::Crc64Nvme, b"hello world"),
            reference(S3Checksum::Crc64Nvme, b"hello world")
        );
        assert_eq!(b64(S3Checksum::Crc64Nvme, b"hello world"), "jSnVw/bqjr4=");
        // The vector crc64fast-nvme's own tests use.
        assert_eq!(
            checksum(S3Checksum::Crc64Nvme, b"hello world!"),
            0xd916_0d1f_a8e4_18e3u64.to_be_bytes()
        );
    }

    #[test]
    fn matches_reference_on_fixed_inputs() {
        let long: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        for kind in S3Checksum::ALL {
            for data in [&b""[..], b"a", b"123456789", &long] {
                assert_eq!(checksum(kind, data), reference(kind, data), "{kind:?}");
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for kind in S3Checksum::ALL {
            assert_eq!(S3Checksum::from_name(kind.name()), Some(kind));
            let lower = kind.name().to_ascii_lowercase();
            assert_eq!(S3Checksum::from_name(&lower), Some(kind));
            assert_eq!(checksum(kind, b"x").len(), kind.digest_len());
        }
        assert_eq!(
            S3Checksum::from_name("CrC64nVmE"),
            Some(S3Checksum::Crc64Nvme)
        );
        for bad in ["", "CRC", "SHA256", "CRC32 ", "CRC64"] {
            assert_eq!(S3Checksum::from_name(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn combine_fixed_cases() {
        for kind in S3Checksum::ALL {
            let whole = checksum(kind, b"hello world");
            let (a, b) = (checksum(kind, b"hello "), checksum(kind, b"world"));
            assert_eq!(combine(kind, &a, &b, 5), Some(whole.clone()));
            let empty = checksum(kind, b"");
            assert_eq!(combine(kind, &whole, &empty, 0), Some(whole.clone()));
            assert_eq!(combine(kind, &empty, &whole, 11), Some(whole.clone()));
            assert_eq!(combine(kind, &a[1..], &b, 5), None);
            assert_eq!(combine(kind, &a, &[0; 9], 5), None);
        }
    }

    #[test]
    fn combine_appends_real_zero_runs() {
        let zeros = vec![0u8; 1000];
        for kind in S3Checksum::ALL {
            let a = checksum(kind, b"abc");
            let want = checksum(kind, &[&b"abc"[..], &zeros].concat());
            let got = combine(kind, &a, &checksum(kind, &zeros), zeros.len() as u64);
            assert_eq!(got, Some(want), "{kind:?}");
        }
    }

    #[test]
    fn base64_vectors() {
        let cases: [(&[u8], &str); 7] = [
            (b"", ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"fooba", "Zm9vYmE="),
            (b"foobar", "Zm9vYmFy"),
        ];
        for (raw, text) in cases {
            assert_eq!(base64_encode(raw), text);
            assert_eq!(base64_decode(text).as_deref(), Some(raw));
        }
        assert_eq!(base64_encode(&[0xfb, 0xff, 0xfe]), "+//+");
        assert_eq!(base64_decode("+//+"), Some(vec![0xfb, 0xff, 0xfe]));
    }

    #[test]
    fn base64_rejects_non_canonical() {
        for bad in [
            "Zg", "Zg=", "Zg===", "Z===", "====", "Zh==", "Zm9=", "Zg==Zg==", "Zm9v\n", " Zm9v",
            "Zm-v", "Zm_v", "Zm9vY===", "=Zm9", "Zm=v", "é===",
        ] {
            assert_eq!(base64_decode(bad), None, "{bad:?}");
        }
    }

    fn any_kind() -> impl Strategy<Value = S3Checksum> {
        prop_oneof![
            Just(S3Checksum::Crc32),
            Just(S3Checksum::Crc32c),
            Just(S3Checksum::Crc64Nvme),
        ]
    }

    proptest! {
        #[test]
        fn streaming_equals_one_shot(
            kind in any_kind(),
            data in proptest::collection::vec(any::<u8>(), 0..2048),
            cuts in proptest::collection::vec(any::<usize>(), 0..8),
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (data.len() + 1)).collect();
            cuts.sort_unstable();
            let mut state = StreamingChecksum::new(kind);
            let mut start = 0;
            for cut in cuts.into_iter().chain([data.len()]) {
                state.update(&data[start..cut]);
                start = cut;
            }
            prop_assert_eq!(state.finalize(), checksum(kind, &data));
        }

        #[test]
        fn tables_match_reference(
            kind in any_kind(),
            data in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            prop_assert_eq!(checksum(kind, &data), reference(kind, &data));
        }

        #[test]
        fn combine_equals_direct(
            kind in any_kind(),
            data in proptest::collection::vec(any::<u8>(), 0..2048),
            cut in any::<usize>(),
        ) {
            let cut = cut % (data.len() + 1);
            let (a, b) = data.split_at(cut);
            let combined = combine(kind, &checksum(kind, a), &checksum(kind, b), b.len() as u64);
            prop_assert_eq!(combined, Some(checksum(kind, &data)));
        }

        #[test]
        fn combine_is_associative(
            kind in any_kind(),
            parts in proptest::collection::vec(
                proptest::collection::vec(any::<u8>(), 0..200), 1..6),
        ) {
            let mut acc = checksum(kind, &parts[0]);
            for part in &parts[1..] {
                let next = combine(kind, &acc, &checksum(kind, part), part.len() as u64);
                acc = next.expect("digest lengths are right");
            }
            prop_assert_eq!(acc, checksum(kind, &parts.concat()));
        }

        #[test]
        fn combine_composes_over_huge_lengths(
            kind in any_kind(),
            seeds in proptest::collection::vec(any::<u8>(), 24),
            n1 in any::<u64>(),
            n2 in any::<u64>(),
        ) {
            // With init == xorout, combine(combine(a, b1, n1), b2, n2)
            // == combine(a, combine(b1, b2, n2), n1 + n2) for any register values.
            let len = kind.digest_len();
            let (n1, n2) = (n1 / 2, n2 / 2);
            let (a, b1, b2) = (&seeds[..len], &seeds[8..8 + len], &seeds[16..16 + len]);
            let left = combine(kind, a, b1, n1).and_then(|ab| combine(kind, &ab, b2, n2));
            let right = combine(kind, b1, b2, n2).and_then(|bb| combine(kind, a, &bb, n1 + n2));
            prop_assert_eq!(left, right);
        }

        #[test]
        fn base64_round_trips(data in proptest::collection::vec(any::<u8>(), 0..100)) {
            let text = base64_encode(&data);
            prop_assert_eq!(text.len(), data.len().div_ceil(3) * 4);
            prop_assert_eq!(base64_decode(&text), Some(data));
        }

        #[test]
        fn base64_decode_never_panics_and_is_canonical(text in "[A-Za-z0-9+/=]{0,16}|.{0,16}") {
            if let Some(raw) = base64_decode(&text) {
                prop_assert_eq!(base64_encode(&raw), text);
            }
        }
    }
}
