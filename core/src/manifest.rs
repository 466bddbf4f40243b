//! The object manifest: everything needed to read an object back, as a compact, versioned,
//! self-checking binary row.
//!
//! Layout: `b"SGM"`, version byte 1, the fields in declaration order (LEB128 varints for
//! integers and lengths, length-prefixed UTF-8 strings, a tag byte for enums), then the
//! little-endian xxh3-64 of everything before it so a corrupted row is caught, not misread.
//! The decoder takes untrusted bytes: every count is capped by the input left, varints must be
//! minimal, and nothing it rejects can panic.
//!
//! The types also have a JSON form (serde), the exchange format with JS at the WASM boundary:
//! camelCase fields, bytes as standard base64, name/value pairs as `[name, value]` arrays, the
//! layout tagged by `"type": "inline" | "sharded"`, checksum kinds as S3's `x-amz-checksum-type`
//! values. Unknown fields are rejected: the binary row would silently drop them.

use serde::{Deserialize, Serialize};
use std::fmt;
use xxhash_rust::xxh3::xxh3_64;

const MAGIC: &[u8; 3] = b"SGM";
/// Version 1: no encryption section. Version 2: an encryption section after the parts. A manifest
/// without encryption is still written as version 1, byte for byte as before.
const VERSION: u8 = 1;
const VERSION_ENCRYPTED: u8 = 2;
const MODE_SSE_S3: u8 = 0;
const MODE_SSE_C: u8 = 1;
/// The AES-GCM tag each encrypted segment carries after its ciphertext.
pub const SEGMENT_TAG_BYTES: u64 = 16;
const HASH_BYTES: usize = 8;
const LAYOUT_INLINE: u8 = 0;
const LAYOUT_SHARDED: u8 = 1;
const KIND_FULL_OBJECT: u8 = 0;
const KIND_COMPOSITE: u8 = 1;
/// Shard chunks are erasure-coded in 64-byte columns, so chunks hold whole columns.
const CHUNK_ALIGN: u32 = 64;

/// Everything needed to answer a GET or HEAD for one object version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    /// Whole object size in bytes.
    #[cfg_attr(test, ts(type = "number"))]
    pub size: u64,
    /// As returned to clients, without quotes.
    pub etag: String,
    /// Set by the worker (the core has no clock).
    #[cfg_attr(test, ts(type = "number"))]
    pub last_modified_ms: u64,
    /// Stored content headers (lowercase names: content-type, content-disposition,
    /// content-encoding, content-language, cache-control, expires), in insertion order.
    pub headers: Vec<(String, String)>,
    /// `x-amz-meta-*`: lowercase name without the prefix, and value.
    pub user_metadata: Vec<(String, String)>,
    /// S3 checksums of the whole object.
    pub checksums: Vec<ObjectChecksum>,
    /// Object tags.
    pub tags: Vec<(String, String)>,
    /// One for a single PUT, N for multipart, in order.
    pub parts: Vec<Part>,
    /// Server-side encryption: absent for a plain object. When present, every part stores
    /// ciphertext (its `size` is the stored size) and `size` is the plaintext's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub encryption: Option<Encryption>,
}

/// How an object's parts are encrypted (docs/storage-format.md, "Encryption"): each part's bytes
/// in segments of `segment_bytes` plaintext, each stored as its AES-256-GCM ciphertext and tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Encryption {
    /// Whose key: the gateway's (SSE-S3) or the client's (SSE-C).
    pub mode: EncryptionMode,
    /// Plaintext bytes per segment (the last one may be shorter).
    pub segment_bytes: u32,
    /// SSE-S3: the object's data key sealed under the master key. SSE-C: the salt the object key
    /// is derived with from the customer's key. Base64.
    pub key: String,
    /// SSE-C: an HMAC of the customer's key that tells a wrong key from the right one (base64);
    /// empty for SSE-S3.
    pub key_check: String,
    /// Per part, in order: the random salt its key is derived with (base64), so that no two
    /// writes, a retried part included, ever encrypt under the same key and nonce.
    pub part_salts: Vec<String>,
}

/// Who holds the key of an encrypted object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum EncryptionMode {
    /// S3's SSE-S3 (`x-amz-server-side-encryption: AES256`).
    #[serde(rename = "SSE-S3")]
    SseS3,
    /// S3's SSE-C (`x-amz-server-side-encryption-customer-*`).
    #[serde(rename = "SSE-C")]
    SseC,
}

/// Plaintext bytes of a part stored encrypted in `stored` bytes (segments of `segment_bytes`
/// plaintext, each followed by its tag); `None` when no segmentation gives that stored size.
pub fn plain_size(stored: u64, segment_bytes: u32) -> Option<u64> {
    let framed = u64::from(segment_bytes) + SEGMENT_TAG_BYTES;
    let (whole, rest) = (stored / framed, stored % framed);
    if segment_bytes == 0 || (rest != 0 && rest <= SEGMENT_TAG_BYTES) {
        return None;
    }
    let tail = if rest == 0 {
        0
    } else {
        rest - SEGMENT_TAG_BYTES
    };
    Some(whole * u64::from(segment_bytes) + tail)
}

/// Stored bytes of `plain` plaintext bytes encrypted in segments of `segment_bytes`.
pub fn stored_size(plain: u64, segment_bytes: u32) -> u64 {
    plain + plain.div_ceil(u64::from(segment_bytes.max(1))) * SEGMENT_TAG_BYTES
}

/// One S3 checksum value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectChecksum {
    /// "CRC32", "CRC32C", "CRC64NVME", "SHA1" or "SHA256".
    pub algorithm: String,
    /// Whether it covers the bytes directly or is a checksum of part checksums.
    pub kind: ChecksumKind,
    /// Raw digest bytes (base64 in JSON, as in the x-amz-checksum-* header).
    #[serde(with = "base64")]
    #[cfg_attr(test, ts(type = "string"))]
    pub value: Vec<u8>,
}

/// S3's `x-amz-checksum-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ChecksumKind {
    /// A checksum of the object's bytes.
    FullObject,
    /// A checksum of the parts' checksums (`-N` suffixed in S3).
    Composite,
}

/// One part of an object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "ManifestPart"))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Part {
    /// Bytes in this part.
    #[cfg_attr(test, ts(type = "number"))]
    pub size: u64,
    /// Part ETag (md5 hex) without quotes.
    pub etag: String,
    /// Where the part's bytes are.
    pub layout: Layout,
}

/// Where a part's bytes live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "PartLayout"))]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Layout {
    /// Small parts live in the manifest itself. A struct variant, not a newtype: an internally
    /// tagged enum needs the tag and the bytes side by side in one JSON object.
    Inline {
        /// The part's bytes (base64 in JSON).
        #[serde(with = "base64")]
        #[cfg_attr(test, ts(type = "string"))]
        data: Vec<u8>,
    },
    /// Erasure-coded across shard files on nodes.
    Sharded(ShardedLayout),
}

/// How a part was erasure-coded and where its shard files are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShardedLayout {
    /// Bytes of the part per erasure-coded block.
    pub block_bytes: u32,
    /// k: data shards.
    pub data_shards: u8,
    /// m: parity shards.
    pub parity_shards: u8,
    /// Bytes per checksummed chunk of a shard file; a multiple of 64.
    pub chunk_bytes: u32,
    /// Unique id of this part's shard files: node object key = "<storage_id>/<shard index>".
    pub storage_id: String,
    /// Node id holding shard file i; exactly k + m entries.
    pub placement: Vec<String>,
    /// Per-part S3 checksums (for COMPOSITE multipart).
    pub part_checksums: Vec<ObjectChecksum>,
}

/// Why a manifest cannot be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestError {
    /// The input ends before a field does.
    Truncated,
    /// The input does not start with `SGM`.
    BadMagic,
    /// A format version this code does not know.
    UnsupportedVersion(u8),
    /// The trailing xxh3 does not match: the row is corrupted.
    HashMismatch,
    /// A varint longer than 10 bytes, not minimal, or too big for its field.
    BadVarint,
    /// A string is not UTF-8.
    InvalidUtf8,
    /// An unknown layout tag byte.
    UnknownLayout(u8),
    /// An unknown checksum kind byte.
    UnknownChecksumKind(u8),
    /// An unknown encryption mode byte.
    UnknownEncryptionMode(u8),
    /// An encrypted manifest without one key salt per part.
    PartSaltsMismatch,
    /// Bytes after the last field (before the hash).
    TrailingBytes,
    /// The parts' sizes do not add up to the object size.
    SizeMismatch {
        /// `Manifest::size`.
        declared: u64,
        /// Sum of the parts' sizes, `None` on overflow.
        parts_total: Option<u64>,
    },
    /// An inline part whose data length differs from its size.
    InlineSizeMismatch {
        /// Index of the part.
        part: usize,
    },
    /// A sharded layout that cannot be read back.
    BadLayout {
        /// Index of the part.
        part: usize,
        /// What is wrong.
        reason: LayoutProblem,
    },
}

/// What is wrong with a [`ShardedLayout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutProblem {
    /// k is 0.
    NoDataShards,
    /// m is 0.
    NoParityShards,
    /// block_bytes is 0.
    ZeroBlockBytes,
    /// chunk_bytes is 0 or not a multiple of 64.
    BadChunkBytes,
    /// placement does not have k + m entries.
    PlacementLength,
}

impl fmt::Display for LayoutProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LayoutProblem::NoDataShards => "no data shards",
            LayoutProblem::NoParityShards => "no parity shards",
            LayoutProblem::ZeroBlockBytes => "block size is zero",
            LayoutProblem::BadChunkBytes => "chunk size is not a positive multiple of 64",
            LayoutProblem::PlacementLength => "placement length is not data + parity shards",
        })
    }
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ManifestError::Truncated => f.write_str("manifest is truncated"),
            ManifestError::BadMagic => f.write_str("not a manifest (bad magic)"),
            ManifestError::UnsupportedVersion(v) => write!(f, "unsupported manifest version {v}"),
            ManifestError::HashMismatch => f.write_str("manifest hash mismatch (corrupted)"),
            ManifestError::BadVarint => f.write_str("malformed or out-of-range varint"),
            ManifestError::InvalidUtf8 => f.write_str("string is not valid UTF-8"),
            ManifestError::UnknownLayout(t) => write!(f, "unknown layout tag {t}"),
            ManifestError::UnknownChecksumKind(t) => write!(f, "unknown checksum kind {t}"),
            ManifestError::UnknownEncryptionMode(t) => write!(f, "unknown encryption mode {t}"),
            ManifestError::PartSaltsMismatch => {
                f.write_str("encrypted manifest without one key salt per part")
            }
            ManifestError::TrailingBytes => f.write_str("trailing bytes after manifest"),
            ManifestError::SizeMismatch {
                declared,
                parts_total: Some(total),
            } => write!(f, "object size {declared} but parts total {total}"),
            ManifestError::SizeMismatch { declared, .. } => {
                write!(f, "object size {declared} but parts total overflows")
            }
            ManifestError::InlineSizeMismatch { part } => {
                write!(f, "part {part}: inline data length differs from part size")
            }
            ManifestError::BadLayout { part, reason } => write!(f, "part {part}: {reason}"),
        }
    }
}

impl std::error::Error for ManifestError {}

impl Manifest {
    /// Validates and serialises; refusing to write a manifest that could not be read back.
    pub fn encode(&self) -> Result<Vec<u8>, ManifestError> {
        self.validate()?;
        let mut w = Writer::default();
        w.raw(MAGIC);
        w.raw(&[if self.encryption.is_some() {
            VERSION_ENCRYPTED
        } else {
            VERSION
        }]);
        self.write(&mut w);
        let hash = xxh3_64(&w.buf);
        w.raw(&hash.to_le_bytes());
        Ok(w.buf)
    }

    /// Parses and validates untrusted bytes.
    pub fn decode(bytes: &[u8]) -> Result<Manifest, ManifestError> {
        let (version, body) = check_envelope(bytes)?;
        let mut r = Reader { rest: body };
        let mut manifest = Manifest::read(&mut r)?;
        if version == VERSION_ENCRYPTED {
            manifest.encryption = Some(Encryption::read(&mut r)?);
        }
        if !r.rest.is_empty() {
            return Err(ManifestError::TrailingBytes);
        }
        manifest.validate()?;
        Ok(manifest)
    }

    fn validate(&self) -> Result<(), ManifestError> {
        // Encrypted parts store more than they hold: their plaintext sizes add up to the object's.
        let plain = |p: &Part| match &self.encryption {
            None => Some(p.size),
            Some(e) => plain_size(p.size, e.segment_bytes),
        };
        let parts_total = self
            .parts
            .iter()
            .try_fold(0u64, |acc, p| acc.checked_add(plain(p)?));
        if parts_total != Some(self.size) {
            return Err(ManifestError::SizeMismatch {
                declared: self.size,
                parts_total,
            });
        }
        if let Some(e) = &self.encryption {
            if e.part_salts.len() != self.parts.len() {
                return Err(ManifestError::PartSaltsMismatch);
            }
        }
        self.parts
            .iter()
            .enumerate()
            .try_for_each(|(i, p)| p.validate(i))
    }

    fn write(&self, w: &mut Writer) {
        w.varint(self.size);
        w.string(&self.etag);
        w.varint(self.last_modified_ms);
        w.list(&self.headers, |w, kv| w.pair(kv));
        w.list(&self.user_metadata, |w, kv| w.pair(kv));
        w.list(&self.checksums, ObjectChecksum::write);
        w.list(&self.tags, |w, kv| w.pair(kv));
        w.list(&self.parts, Part::write);
        if let Some(e) = &self.encryption {
            e.write(w);
        }
    }

    fn read(r: &mut Reader) -> Result<Self, ManifestError> {
        Ok(Manifest {
            size: r.varint()?,
            etag: r.string()?,
            last_modified_ms: r.varint()?,
            headers: r.list(Reader::pair)?,
            user_metadata: r.list(Reader::pair)?,
            checksums: r.list(ObjectChecksum::read)?,
            tags: r.list(Reader::pair)?,
            parts: r.list(Part::read)?,
            encryption: None,
        })
    }
}

impl Encryption {
    fn write(&self, w: &mut Writer) {
        w.raw(&[match self.mode {
            EncryptionMode::SseS3 => MODE_SSE_S3,
            EncryptionMode::SseC => MODE_SSE_C,
        }]);
        w.varint(u64::from(self.segment_bytes));
        w.string(&self.key);
        w.string(&self.key_check);
        w.list(&self.part_salts, |w, salt| w.string(salt));
    }

    fn read(r: &mut Reader) -> Result<Self, ManifestError> {
        let mode = match r.byte()? {
            MODE_SSE_S3 => EncryptionMode::SseS3,
            MODE_SSE_C => EncryptionMode::SseC,
            other => return Err(ManifestError::UnknownEncryptionMode(other)),
        };
        Ok(Encryption {
            mode,
            segment_bytes: r.varint_u32()?,
            key: r.string()?,
            key_check: r.string()?,
            part_salts: r.list(Reader::string)?,
        })
    }
}

/// Checks magic, version and hash; returns the version and the fields between header and hash.
fn check_envelope(bytes: &[u8]) -> Result<(u8, &[u8]), ManifestError> {
    let magic = bytes.get(..MAGIC.len()).ok_or(ManifestError::Truncated)?;
    if magic != MAGIC {
        return Err(ManifestError::BadMagic);
    }
    let version = *bytes.get(MAGIC.len()).ok_or(ManifestError::Truncated)?;
    if version != VERSION && version != VERSION_ENCRYPTED {
        return Err(ManifestError::UnsupportedVersion(version));
    }
    let header = MAGIC.len() + 1;
    let hashed_len = bytes
        .len()
        .checked_sub(HASH_BYTES)
        .filter(|&n| n >= header)
        .ok_or(ManifestError::Truncated)?;
    let (hashed, stored) = bytes.split_at(hashed_len);
    if xxh3_64(hashed).to_le_bytes() != stored {
        return Err(ManifestError::HashMismatch);
    }
    Ok((version, &hashed[header..]))
}

impl ObjectChecksum {
    fn write(w: &mut Writer, c: &Self) {
        w.string(&c.algorithm);
        w.raw(&[match c.kind {
            ChecksumKind::FullObject => KIND_FULL_OBJECT,
            ChecksumKind::Composite => KIND_COMPOSITE,
        }]);
        w.bytes(&c.value);
    }

    fn read(r: &mut Reader) -> Result<Self, ManifestError> {
        let algorithm = r.string()?;
        let kind = match r.byte()? {
            KIND_FULL_OBJECT => ChecksumKind::FullObject,
            KIND_COMPOSITE => ChecksumKind::Composite,
            other => return Err(ManifestError::UnknownChecksumKind(other)),
        };
        let value = r.bytes()?.to_vec();
        Ok(ObjectChecksum {
            algorithm,
            kind,
            value,
        })
    }
}

impl Part {
    fn validate(&self, part: usize) -> Result<(), ManifestError> {
        match &self.layout {
            Layout::Inline { data } if data.len() as u64 != self.size => {
                Err(ManifestError::InlineSizeMismatch { part })
            }
            Layout::Inline { .. } => Ok(()),
            Layout::Sharded(s) => s.problem().map_or(Ok(()), |reason| {
                Err(ManifestError::BadLayout { part, reason })
            }),
        }
    }

    fn write(w: &mut Writer, p: &Self) {
        w.varint(p.size);
        w.string(&p.etag);
        match &p.layout {
            Layout::Inline { data } => {
                w.raw(&[LAYOUT_INLINE]);
                w.bytes(data);
            }
            Layout::Sharded(s) => {
                w.raw(&[LAYOUT_SHARDED]);
                s.write(w);
            }
        }
    }

    fn read(r: &mut Reader) -> Result<Self, ManifestError> {
        let size = r.varint()?;
        let etag = r.string()?;
        let layout = match r.byte()? {
            LAYOUT_INLINE => Layout::Inline {
                data: r.bytes()?.to_vec(),
            },
            LAYOUT_SHARDED => Layout::Sharded(ShardedLayout::read(r)?),
            other => return Err(ManifestError::UnknownLayout(other)),
        };
        Ok(Part { size, etag, layout })
    }
}

impl ShardedLayout {
    fn problem(&self) -> Option<LayoutProblem> {
        let shards = usize::from(self.data_shards) + usize::from(self.parity_shards);
        if self.data_shards == 0 {
            Some(LayoutProblem::NoDataShards)
        } else if self.parity_shards == 0 {
            Some(LayoutProblem::NoParityShards)
        } else if self.block_bytes == 0 {
            Some(LayoutProblem::ZeroBlockBytes)
        } else if self.chunk_bytes == 0 || self.chunk_bytes % CHUNK_ALIGN != 0 {
            Some(LayoutProblem::BadChunkBytes)
        } else if self.placement.len() != shards {
            Some(LayoutProblem::PlacementLength)
        } else {
            None
        }
    }

    fn write(&self, w: &mut Writer) {
        w.varint(self.block_bytes.into());
        w.raw(&[self.data_shards, self.parity_shards]);
        w.varint(self.chunk_bytes.into());
        w.string(&self.storage_id);
        w.list(&self.placement, |w, s| w.string(s));
        w.list(&self.part_checksums, ObjectChecksum::write);
    }

    fn read(r: &mut Reader) -> Result<Self, ManifestError> {
        Ok(ShardedLayout {
            block_bytes: r.varint_u32()?,
            data_shards: r.byte()?,
            parity_shards: r.byte()?,
            chunk_bytes: r.varint_u32()?,
            storage_id: r.string()?,
            placement: r.list(Reader::string)?,
            part_checksums: r.list(ObjectChecksum::read)?,
        })
    }
}

/// Bytes as a standard base64 string in the JSON form (`#[serde(with = "base64")]`).
mod base64 {
    use crate::checksum::{base64_decode, base64_encode};
    use serde::de::{Deserializer, Error};
    use serde::{Deserialize, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64_encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        base64_decode(&text).ok_or_else(|| D::Error::custom(format!("invalid base64 {text:?}")))
    }
}

/// Appends fields to a growing buffer.
#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Unsigned LEB128, minimal.
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.varint(bytes.len() as u64);
        self.raw(bytes);
    }

    fn string(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    fn pair(&mut self, (k, v): &(String, String)) {
        self.string(k);
        self.string(v);
    }

    fn list<T>(&mut self, items: &[T], mut each: impl FnMut(&mut Self, &T)) {
        self.varint(items.len() as u64);
        for item in items {
            each(self, item);
        }
    }
}

/// Consumes fields from untrusted input, never reading or allocating past its end.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ManifestError> {
        if n > self.rest.len() {
            return Err(ManifestError::Truncated);
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, ManifestError> {
        let (&first, tail) = self.rest.split_first().ok_or(ManifestError::Truncated)?;
        self.rest = tail;
        Ok(first)
    }

    /// Unsigned LEB128: at most 10 bytes, no bits past 64, no redundant trailing zero byte.
    fn varint(&mut self) -> Result<u64, ManifestError> {
        let mut value = 0u64;
        for i in 0..10 {
            let b = self.byte()?;
            let low = u64::from(b & 0x7f);
            if i == 9 && low > 1 {
                return Err(ManifestError::BadVarint);
            }
            value |= low << (7 * i);
            if b & 0x80 == 0 {
                if i > 0 && b == 0 {
                    return Err(ManifestError::BadVarint);
                }
                return Ok(value);
            }
        }
        Err(ManifestError::BadVarint)
    }

    fn varint_u32(&mut self) -> Result<u32, ManifestError> {
        u32::try_from(self.varint()?).map_err(|_| ManifestError::BadVarint)
    }

    /// A length or count, which can never exceed the bytes left (each item takes one or more).
    fn len(&mut self) -> Result<usize, ManifestError> {
        let n = self.varint()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.rest.len())
            .ok_or(ManifestError::Truncated)
    }

    fn bytes(&mut self) -> Result<&'a [u8], ManifestError> {
        let n = self.len()?;
        self.take(n)
    }

    fn string(&mut self) -> Result<String, ManifestError> {
        let bytes = self.bytes()?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| ManifestError::InvalidUtf8)
    }

    fn pair(&mut self) -> Result<(String, String), ManifestError> {
        Ok((self.string()?, self.string()?))
    }

    fn list<T>(
        &mut self,
        mut each: impl FnMut(&mut Self) -> Result<T, ManifestError>,
    ) -> Result<Vec<T>, ManifestError> {
        let n = self.len()?;
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            items.push(each(self)?);
        }
        Ok(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    fn sharded(k: u8, m: u8) -> ShardedLayout {
        ShardedLayout {
            block_bytes: 1 << 20,
            data_shards: k,
            parity_shards: m,
            chunk_bytes: 64 * 1024,
            storage_id: "01J9ZX8Q".into(),
            placement: (0..usize::from(k) + usize::from(m))
                .map(|i| format!("node-{i}"))
                .collect(),
            part_checksums: vec![ObjectChecksum {
                algorithm: "CRC32C".into(),
                kind: ChecksumKind::FullObject,
                value: vec![1, 2, 3, 4],
            }],
        }
    }

    fn sample() -> Manifest {
        Manifest {
            size: 5 + 10_000_000,
            etag: "9b2cf535f27731c974343645a3985328-2".into(),
            last_modified_ms: 1_700_000_000_123,
            headers: vec![
                ("content-type".into(), "text/plain; charset=utf-8".into()),
                ("cache-control".into(), "no-cache".into()),
            ],
            user_metadata: vec![("author".into(), "Zoë".into())],
            checksums: vec![ObjectChecksum {
                algorithm: "CRC64NVME".into(),
                kind: ChecksumKind::FullObject,
                value: vec![0xAE, 0x8B, 0x14, 0x86, 0x0A, 0x79, 0x98, 0x88],
            }],
            tags: vec![("team".into(), "storage".into())],
            parts: vec![
                Part {
                    size: 5,
                    etag: "5d41402abc4b2a76b9719d911017c592".into(),
                    layout: Layout::Inline {
                        data: b"hello".to_vec(),
                    },
                },
                Part {
                    size: 10_000_000,
                    etag: "7d793037a0760186574b0282f2f435e7".into(),
                    layout: Layout::Sharded(sharded(4, 2)),
                },
            ],
            encryption: None,
        }
    }

    fn empty() -> Manifest {
        Manifest {
            size: 0,
            etag: "d41d8cd98f00b204e9800998ecf8427e".into(),
            last_modified_ms: 0,
            headers: vec![],
            user_metadata: vec![],
            checksums: vec![],
            tags: vec![],
            parts: vec![Part {
                size: 0,
                etag: "d41d8cd98f00b204e9800998ecf8427e".into(),
                layout: Layout::Inline { data: vec![] },
            }],
            encryption: None,
        }
    }

    /// An encrypted object of 100,000 bytes in two parts (segments of 16,368 plaintext bytes).
    fn encrypted() -> Manifest {
        let seg = 16_368;
        let mut m = sample();
        m.parts[0].size = stored_size(5, seg);
        m.parts[0].layout = Layout::Inline {
            data: vec![7; stored_size(5, seg) as usize],
        };
        m.parts[1].size = stored_size(99_995, seg);
        m.size = 100_000;
        m.encryption = Some(Encryption {
            mode: EncryptionMode::SseC,
            segment_bytes: seg,
            key: "c2FsdA==".into(),
            key_check: "Y2hlY2s=".into(),
            part_salts: vec!["AAAA".into(), "BBBB".into()],
        });
        m
    }

    #[test]
    fn encrypted_manifests_round_trip_as_version_2_and_plain_ones_stay_version_1() {
        let m = encrypted();
        let bytes = m.encode().unwrap();
        assert_eq!(bytes[MAGIC.len()], VERSION_ENCRYPTED);
        assert_eq!(Manifest::decode(&bytes).unwrap(), m);
        let json = serde_json::to_string(&m).unwrap();
        assert!(json.contains(r#""encryption":{"mode":"SSE-C","segmentBytes":16368"#));
        assert_eq!(serde_json::from_str::<Manifest>(&json).unwrap(), m);
        let plain = sample().encode().unwrap();
        assert_eq!(plain[MAGIC.len()], VERSION);
        assert!(!serde_json::to_string(&sample())
            .unwrap()
            .contains("encryption"));
    }

    #[test]
    fn encrypted_parts_must_hold_the_plaintext_size() {
        let mut m = encrypted();
        m.size += 1;
        assert!(matches!(
            m.encode(),
            Err(ManifestError::SizeMismatch { .. })
        ));
        let mut m = encrypted();
        m.parts[1].size = 16_384 * 3 + 10; // a last segment shorter than its tag: no plaintext size
        assert!(matches!(
            m.encode(),
            Err(ManifestError::SizeMismatch {
                parts_total: None,
                ..
            })
        ));
        let mut m = encrypted();
        m.encryption.as_mut().unwrap().part_salts.pop();
        assert_eq!(m.encode(), Err(ManifestError::PartSaltsMismatch));
    }

    /// Re-hashes a hand-edited body so decoding reaches the field checks.
    fn sealed(body: &[u8]) -> Vec<u8> {
        let mut out = [&MAGIC[..], &[VERSION], body].concat();
        let hash = xxh3_64(&out);
        out.extend_from_slice(&hash.to_le_bytes());
        out
    }

    fn body_of(m: &Manifest) -> Vec<u8> {
        let mut w = Writer::default();
        m.write(&mut w);
        w.buf
    }

    #[test]
    fn round_trips_samples() {
        for m in [sample(), empty()] {
            let bytes = m.encode().unwrap();
            assert_eq!(&bytes[..4], b"SGM\x01");
            assert_eq!(Manifest::decode(&bytes), Ok(m));
        }
    }

    #[test]
    fn empty_manifest_layout_is_stable() {
        let bytes = empty().encode().unwrap();
        let mut want = b"SGM\x01\x00\x20d41d8cd98f00b204e9800998ecf8427e\x00".to_vec();
        want.extend_from_slice(b"\x00\x00\x00\x00\x01\x00\x20d41d8cd98f00b204e9800998ecf8427e");
        want.extend_from_slice(b"\x00\x00");
        assert_eq!(&bytes[..bytes.len() - HASH_BYTES], want.as_slice());
        assert_eq!(bytes.len(), want.len() + HASH_BYTES);
    }

    /// Edits a valid manifest into an invalid one.
    type Breakage = fn(&mut Manifest);

    #[test]
    fn encode_rejects_inconsistent_manifests() {
        let cases: Vec<(Breakage, ManifestError)> = vec![
            (
                |m| m.size += 1,
                ManifestError::SizeMismatch {
                    declared: 10_000_006,
                    parts_total: Some(10_000_005),
                },
            ),
            (
                |m| m.parts[1].size = u64::MAX,
                ManifestError::SizeMismatch {
                    declared: 10_000_005,
                    parts_total: None,
                },
            ),
            (
                |m| {
                    m.parts[0].layout = Layout::Inline {
                        data: b"hell".to_vec(),
                    };
                },
                ManifestError::InlineSizeMismatch { part: 0 },
            ),
            (
                |m| set_layout(m, |s| s.data_shards = 0),
                bad(LayoutProblem::NoDataShards),
            ),
            (
                |m| set_layout(m, |s| s.parity_shards = 0),
                bad(LayoutProblem::NoParityShards),
            ),
            (
                |m| set_layout(m, |s| s.block_bytes = 0),
                bad(LayoutProblem::ZeroBlockBytes),
            ),
            (
                |m| set_layout(m, |s| s.chunk_bytes = 0),
                bad(LayoutProblem::BadChunkBytes),
            ),
            (
                |m| set_layout(m, |s| s.chunk_bytes = 100),
                bad(LayoutProblem::BadChunkBytes),
            ),
            (
                |m| {
                    set_layout(m, |s| {
                        s.placement.pop();
                    })
                },
                bad(LayoutProblem::PlacementLength),
            ),
        ];
        for (i, (break_it, want)) in cases.into_iter().enumerate() {
            let mut m = sample();
            break_it(&mut m);
            assert_eq!(m.encode(), Err(want.clone()), "case {i}");
            // The decoder applies the same rules to a well-sealed row.
            assert_eq!(
                Manifest::decode(&sealed(&body_of(&m))),
                Err(want),
                "case {i}"
            );
        }
    }

    fn set_layout(m: &mut Manifest, edit: impl Fn(&mut ShardedLayout)) {
        if let Layout::Sharded(s) = &mut m.parts[1].layout {
            edit(s);
        }
    }

    fn bad(reason: LayoutProblem) -> ManifestError {
        ManifestError::BadLayout { part: 1, reason }
    }

    #[test]
    fn decode_rejects_bad_envelopes() {
        let good = sample().encode().unwrap();
        assert_eq!(Manifest::decode(b""), Err(ManifestError::Truncated));
        assert_eq!(Manifest::decode(b"SG"), Err(ManifestError::Truncated));
        assert_eq!(Manifest::decode(b"SGM"), Err(ManifestError::Truncated));
        assert_eq!(Manifest::decode(b"SGM\x01"), Err(ManifestError::Truncated));
        assert_eq!(Manifest::decode(b"XGM\x01"), Err(ManifestError::BadMagic));
        let mut v3 = good.clone();
        v3[3] = 3;
        assert_eq!(
            Manifest::decode(&v3),
            Err(ManifestError::UnsupportedVersion(3))
        );
        let mut flipped = good.clone();
        flipped[10] ^= 1;
        assert_eq!(Manifest::decode(&flipped), Err(ManifestError::HashMismatch));
        let mut longer = good.clone();
        longer.push(0);
        assert_eq!(Manifest::decode(&longer), Err(ManifestError::HashMismatch));
    }

    #[test]
    fn decode_rejects_bad_fields() {
        let body = body_of(&empty());
        let mut trailing = body.clone();
        trailing.push(0);
        assert_eq!(
            Manifest::decode(&sealed(&trailing)),
            Err(ManifestError::TrailingBytes)
        );
        // size varint: overlong (11 bytes), non-minimal, and bit 64 set.
        for varint in [
            &[0x80u8; 11][..],
            &[0x80, 0x00],
            &[0xff; 9].iter().chain(&[0x02]).copied().collect::<Vec<_>>(),
        ] {
            let forged = [varint, &body[1..]].concat();
            assert_eq!(
                Manifest::decode(&sealed(&forged)),
                Err(ManifestError::BadVarint)
            );
        }
        // etag length far beyond the input: no allocation, just Truncated.
        let huge = [
            &[0x00][..],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
        ]
        .concat();
        assert_eq!(
            Manifest::decode(&sealed(&huge)),
            Err(ManifestError::Truncated)
        );
        // Invalid UTF-8 etag.
        let bad_utf8 = [0x00, 0x02, 0xc3, 0x28];
        assert_eq!(
            Manifest::decode(&sealed(&bad_utf8)),
            Err(ManifestError::InvalidUtf8)
        );
        // Unknown layout tag: patch the inline tag byte of the empty object's part.
        let tag_at = body.len() - 2;
        assert_eq!(body[tag_at], LAYOUT_INLINE);
        let mut unknown = body.clone();
        unknown[tag_at] = 7;
        assert_eq!(
            Manifest::decode(&sealed(&unknown)),
            Err(ManifestError::UnknownLayout(7))
        );
    }

    #[test]
    fn decode_rejects_unknown_checksum_kind() {
        let mut m = empty();
        m.checksums.push(ObjectChecksum {
            algorithm: "SHA256".into(),
            kind: ChecksumKind::Composite,
            value: vec![9; 32],
        });
        let body = body_of(&m);
        let at = body
            .windows(6)
            .position(|w| w == b"SHA256")
            .map(|p| p + 6)
            .unwrap();
        assert_eq!(body[at], KIND_COMPOSITE);
        let mut forged = body.clone();
        forged[at] = 2;
        assert_eq!(
            Manifest::decode(&sealed(&forged)),
            Err(ManifestError::UnknownChecksumKind(2))
        );
    }

    #[test]
    fn varints_round_trip_at_the_edges() {
        for v in [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut w = Writer::default();
            w.varint(v);
            assert!(w.buf.len() <= 10);
            let mut r = Reader { rest: &w.buf };
            assert_eq!(r.varint(), Ok(v));
            assert!(r.rest.is_empty());
        }
        let mut r = Reader {
            rest: &[0x80, 0x80, 0x80, 0x80, 0x10],
        };
        assert_eq!(r.varint_u32(), Err(ManifestError::BadVarint));
    }

    #[test]
    fn errors_display() {
        let e = ManifestError::BadLayout {
            part: 3,
            reason: LayoutProblem::PlacementLength,
        };
        assert_eq!(
            e.to_string(),
            "part 3: placement length is not data + parity shards"
        );
        assert_eq!(
            ManifestError::HashMismatch.to_string(),
            "manifest hash mismatch (corrupted)"
        );
    }

    /// `sample()` plus a COMPOSITE checksum, so every field and variant has a JSON form to check.
    fn full_sample() -> Manifest {
        let mut m = sample();
        m.checksums.push(ObjectChecksum {
            algorithm: "CRC32C".into(),
            kind: ChecksumKind::Composite,
            value: vec![9; 4],
        });
        m
    }

    /// `full_sample()` as the JS side writes it.
    const FULL_SAMPLE_JSON: &str = r#"{
        "size": 10000005,
        "etag": "9b2cf535f27731c974343645a3985328-2",
        "lastModifiedMs": 1700000000123,
        "headers": [["content-type", "text/plain; charset=utf-8"], ["cache-control", "no-cache"]],
        "userMetadata": [["author", "Zo\u00eb"]],
        "checksums": [
            {"algorithm": "CRC64NVME", "kind": "FULL_OBJECT", "value": "rosUhgp5mIg="},
            {"algorithm": "CRC32C", "kind": "COMPOSITE", "value": "CQkJCQ=="}
        ],
        "tags": [["team", "storage"]],
        "parts": [
            {
                "size": 5,
                "etag": "5d41402abc4b2a76b9719d911017c592",
                "layout": {"type": "inline", "data": "aGVsbG8="}
            },
            {
                "size": 10000000,
                "etag": "7d793037a0760186574b0282f2f435e7",
                "layout": {
                    "type": "sharded",
                    "blockBytes": 1048576,
                    "dataShards": 4,
                    "parityShards": 2,
                    "chunkBytes": 65536,
                    "storageId": "01J9ZX8Q",
                    "placement": ["node-0", "node-1", "node-2", "node-3", "node-4", "node-5"],
                    "partChecksums": [{"algorithm": "CRC32C", "kind": "FULL_OBJECT", "value": "AQIDBA=="}]
                }
            }
        ]
    }"#;

    #[test]
    fn json_form_is_stable() {
        let parsed: Manifest = serde_json::from_str(FULL_SAMPLE_JSON).unwrap();
        assert_eq!(parsed, full_sample());
        let want: serde_json::Value = serde_json::from_str(FULL_SAMPLE_JSON).unwrap();
        assert_eq!(serde_json::to_value(full_sample()).unwrap(), want);
        // The tag comes first, then the variant's fields, flat.
        let text = serde_json::to_string(&full_sample()).unwrap();
        assert!(text.starts_with(r#"{"size":10000005,"etag":"#), "{text}");
        assert!(text.contains(r#""layout":{"type":"inline","data":"aGVsbG8="}"#));
        assert!(text.contains(r#""layout":{"type":"sharded","blockBytes":1048576,"#));
    }

    #[test]
    fn json_round_trips_samples() {
        for m in [full_sample(), empty()] {
            let json = serde_json::to_string(&m).unwrap();
            let back: Manifest = serde_json::from_str(&json).unwrap();
            assert_eq!(back, m);
            assert_eq!(serde_json::to_string(&back).unwrap(), json);
        }
    }

    #[test]
    fn json_rejects_malformed_manifests() {
        let cases: Vec<(&str, serde_json::Value, &str)> = vec![
            ("", serde_json::json!(1), "invalid type: integer `1`"),
            ("/extra", serde_json::json!(1), "unknown field `extra`"),
            (
                "/parts/0/layout/extra",
                serde_json::json!(1),
                "unknown field `extra`",
            ),
            (
                "/parts/1/layout/k",
                serde_json::json!(4),
                "unknown field `k`",
            ),
            (
                "/parts/0/layout/type",
                serde_json::json!("remote"),
                "unknown variant `remote`",
            ),
            (
                "/parts/0/layout/data",
                serde_json::json!("aGVsbG8"),
                "invalid base64",
            ),
            (
                "/checksums/0/value",
                serde_json::json!([1, 2]),
                "invalid type: sequence",
            ),
            (
                "/checksums/0/kind",
                serde_json::json!("FullObject"),
                "unknown variant `FullObject`",
            ),
            (
                "/parts/1/layout/dataShards",
                serde_json::json!(256),
                "invalid value: integer `256`",
            ),
            (
                "/size",
                serde_json::json!(-1),
                "invalid value: integer `-1`",
            ),
            (
                "/size",
                serde_json::json!(1.5),
                "invalid type: floating point `1.5`",
            ),
            ("/headers/0", serde_json::json!(["a", "b", "c"]), "trailing"),
            ("/tags/0", serde_json::json!(["a"]), "invalid length 1"),
        ];
        for (at, value, want) in cases {
            let mut v: serde_json::Value = serde_json::from_str(FULL_SAMPLE_JSON).unwrap();
            if at.is_empty() {
                v = value;
            } else if let Some(slot) = v.pointer_mut(at) {
                *slot = value;
            } else {
                let (parent, key) = at.rsplit_once('/').unwrap();
                v.pointer_mut(parent).unwrap()[key] = value;
            }
            let e = serde_json::from_str::<Manifest>(&v.to_string()).unwrap_err();
            assert!(e.to_string().contains(want), "{at}: {e}");
        }
        let mut v: serde_json::Value = serde_json::from_str(FULL_SAMPLE_JSON).unwrap();
        v.as_object_mut().unwrap().remove("etag");
        let e = serde_json::from_str::<Manifest>(&v.to_string()).unwrap_err();
        assert!(e.to_string().contains("missing field `etag`"), "{e}");
    }

    fn text() -> impl Strategy<Value = String> {
        "\\PC{0,12}"
    }

    fn pairs() -> impl Strategy<Value = Vec<(String, String)>> {
        vec((text(), text()), 0..4)
    }

    fn checksums() -> impl Strategy<Value = Vec<ObjectChecksum>> {
        let kind = prop_oneof![
            Just(ChecksumKind::FullObject),
            Just(ChecksumKind::Composite)
        ];
        vec(
            (text(), kind, vec(any::<u8>(), 0..33)).prop_map(|(algorithm, kind, value)| {
                ObjectChecksum {
                    algorithm,
                    kind,
                    value,
                }
            }),
            0..3,
        )
    }

    fn sharded_layout() -> impl Strategy<Value = ShardedLayout> {
        (1u8..=16, 1u8..=8)
            .prop_flat_map(|(k, m)| {
                let n = usize::from(k) + usize::from(m);
                (
                    Just((k, m)),
                    1u32..,
                    1u32..=(u32::MAX / CHUNK_ALIGN),
                    text(),
                    vec(text(), n),
                    checksums(),
                )
            })
            .prop_map(
                |((k, m), block, chunks, storage_id, placement, part_checksums)| ShardedLayout {
                    block_bytes: block,
                    data_shards: k,
                    parity_shards: m,
                    chunk_bytes: chunks * CHUNK_ALIGN,
                    storage_id,
                    placement,
                    part_checksums,
                },
            )
    }

    fn part() -> impl Strategy<Value = Part> {
        let inline = vec(any::<u8>(), 0..64).prop_map(|data| Layout::Inline { data });
        let layout = prop_oneof![inline, sharded_layout().prop_map(Layout::Sharded)];
        (layout, 0u64..(1 << 40), text()).prop_map(|(layout, sharded_size, etag)| {
            let size = match &layout {
                Layout::Inline { data } => data.len() as u64,
                Layout::Sharded(_) => sharded_size,
            };
            Part { size, etag, layout }
        })
    }

    fn manifest() -> impl Strategy<Value = Manifest> {
        (
            text(),
            any::<u64>(),
            pairs(),
            pairs(),
            checksums(),
            pairs(),
            vec(part(), 0..4),
        )
            .prop_map(
                |(etag, last_modified_ms, headers, user_metadata, checksums, tags, parts)| {
                    Manifest {
                        size: parts.iter().map(|p| p.size).sum(),
                        etag,
                        last_modified_ms,
                        headers,
                        user_metadata,
                        checksums,
                        tags,
                        parts,
                        encryption: None,
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn segment_sizes_map_both_ways(plain in 0u64..10_000_000, seg in 1u32..70_000) {
            let stored = stored_size(plain, seg);
            prop_assert_eq!(plain_size(stored, seg), Some(plain));
            prop_assert!(stored >= plain);
        }

        #[test]
        fn round_trips(m in manifest()) {
            let bytes = m.encode().unwrap();
            prop_assert_eq!(Manifest::decode(&bytes), Ok(m));
        }

        #[test]
        fn json_round_trips(m in manifest()) {
            let json = serde_json::to_string(&m).unwrap();
            let back: Manifest = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(serde_json::to_string(&back).unwrap(), json);
            prop_assert_eq!(back, m);
        }

        #[test]
        fn random_bytes_never_panic(bytes in vec(any::<u8>(), 0..256)) {
            let _ = Manifest::decode(&bytes);
            let _ = Manifest::decode(&sealed(&bytes));
        }

        #[test]
        fn truncations_fail(m in manifest(), cut in any::<usize>()) {
            let bytes = m.encode().unwrap();
            let cut = cut % bytes.len();
            prop_assert!(Manifest::decode(&bytes[..cut]).is_err());
            // Even re-sealed, a cut body must not decode to anything.
            let body = &bytes[4..bytes.len() - HASH_BYTES];
            let body_cut = cut % (body.len() + 1);
            if body_cut < body.len() {
                prop_assert!(Manifest::decode(&sealed(&body[..body_cut])).is_err());
            }
        }

        #[test]
        fn single_byte_flips_fail(m in manifest(), at in any::<usize>(), mask in 1u8..) {
            let mut bytes = m.encode().unwrap();
            let at = at % bytes.len();
            bytes[at] ^= mask;
            prop_assert!(Manifest::decode(&bytes).is_err());
        }

        #[test]
        fn resealed_flips_never_panic(m in manifest(), at in any::<usize>(), mask in 1u8..) {
            let bytes = m.encode().unwrap();
            let mut body = bytes[4..bytes.len() - HASH_BYTES].to_vec();
            if !body.is_empty() {
                let at = at % body.len();
                body[at] ^= mask;
                if let Ok(decoded) = Manifest::decode(&sealed(&body)) {
                    // Whatever decodes is valid and re-encodes to the same bytes.
                    prop_assert_eq!(decoded.encode().unwrap(), sealed(&body));
                }
            }
        }
    }
}
