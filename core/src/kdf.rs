//! Argon2id (RFC 9106), the memory-hard passphrase KDF of client-side encryption
//! (docs/storage-format.md, "Client-side encryption").
//!
//! The client derives the key that wraps an object's data key from a passphrase and the salt and
//! parameters stored in the object's metadata. That metadata comes from the gateway, which the
//! client does not trust, so the parameters are bounded here: a hostile header cannot make a client
//! allocate more than [`MAX_MEMORY_KIB`] or spin for more than [`MAX_PASSES`] passes.

use argon2::{Algorithm, Argon2, AssociatedData, Block, ParamsBuilder, Version};

/// Bytes of the derived key (an AES-256 key).
pub const KEY_BYTES: usize = 32;
/// Largest memory cost accepted, in KiB (256 MiB).
pub const MAX_MEMORY_KIB: u32 = 256 * 1024;
/// Largest number of passes accepted.
pub const MAX_PASSES: u32 = 10;
/// Largest degree of parallelism (lanes) accepted.
pub const MAX_LANES: u32 = 8;
/// Salt lengths accepted, in bytes (RFC 9106 recommends 16).
pub const MIN_SALT_BYTES: usize = 16;
pub const MAX_SALT_BYTES: usize = 64;

/// Why a derivation was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KdfError {
    /// A parameter is outside the accepted bounds; the string says which.
    Bounds(String),
    /// The Argon2 implementation refused the input.
    Argon2(String),
}

impl std::fmt::Display for KdfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KdfError::Bounds(what) => write!(f, "Argon2id parameters out of bounds: {what}"),
            KdfError::Argon2(what) => write!(f, "Argon2id: {what}"),
        }
    }
}

/// Checks the parameters against the bounds above, before any memory is allocated.
pub fn check_params(
    salt_len: usize,
    memory_kib: u32,
    passes: u32,
    lanes: u32,
) -> Result<(), KdfError> {
    let bounds = |what: String| Err(KdfError::Bounds(what));
    if !(1..=MAX_LANES).contains(&lanes) {
        return bounds(format!("lanes {lanes} not in 1..={MAX_LANES}"));
    }
    // Argon2 needs at least 8 blocks (KiB) per lane.
    if memory_kib < 8 * lanes || memory_kib > MAX_MEMORY_KIB {
        return bounds(format!(
            "memory {memory_kib} KiB not in {}..={MAX_MEMORY_KIB}",
            8 * lanes
        ));
    }
    if !(1..=MAX_PASSES).contains(&passes) {
        return bounds(format!("passes {passes} not in 1..={MAX_PASSES}"));
    }
    if !(MIN_SALT_BYTES..=MAX_SALT_BYTES).contains(&salt_len) {
        return bounds(format!(
            "salt of {salt_len} bytes not in {MIN_SALT_BYTES}..={MAX_SALT_BYTES}"
        ));
    }
    Ok(())
}

/// The 32-byte Argon2id (version 0x13) key of `passphrase` with `salt`, `memory_kib` KiB of
/// memory, `passes` passes and `lanes` lanes. Refuses parameters outside the bounds above.
pub fn argon2id(
    passphrase: &[u8],
    salt: &[u8],
    memory_kib: u32,
    passes: u32,
    lanes: u32,
) -> Result<[u8; KEY_BYTES], KdfError> {
    check_params(salt.len(), memory_kib, passes, lanes)?;
    derive(passphrase, salt, &[], &[], memory_kib, passes, lanes)
}

/// Argon2id with RFC 9106's optional secret and associated data (empty in `argon2id`; here so the
/// RFC's test vector, which uses both, checks the very code path `argon2id` runs).
fn derive(
    passphrase: &[u8],
    salt: &[u8],
    secret: &[u8],
    data: &[u8],
    memory_kib: u32,
    passes: u32,
    lanes: u32,
) -> Result<[u8; KEY_BYTES], KdfError> {
    let failed = |e: argon2::Error| KdfError::Argon2(e.to_string());
    let mut builder = ParamsBuilder::new();
    builder
        .m_cost(memory_kib)
        .t_cost(passes)
        .p_cost(lanes)
        .output_len(KEY_BYTES);
    if !data.is_empty() {
        builder.data(AssociatedData::new(data).map_err(failed)?);
    }
    let params = builder.build().map_err(failed)?;
    let argon = if secret.is_empty() {
        Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
    } else {
        Argon2::new_with_secret(secret, Algorithm::Argon2id, Version::V0x13, params)
            .map_err(failed)?
    };
    // The memory, one 1 KiB block per KiB of cost (rounded down to whole segments by the crate).
    let mut blocks = vec![Block::default(); argon.params().block_count()];
    let mut key = [0u8; KEY_BYTES];
    argon
        .hash_password_into_with_memory(passphrase, salt, &mut key, &mut blocks)
        .map_err(failed)?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// RFC 9106 section 5.3: Argon2id, m = 32 KiB, t = 3, p = 4, with secret and associated data.
    #[test]
    fn rfc9106_argon2id_test_vector() {
        let key = derive(&[1; 32], &[2; 16], &[3; 8], &[4; 12], 32, 3, 4).unwrap();
        assert_eq!(
            hex(&key),
            "0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659"
        );
    }

    /// The public function is `derive` without secret and data, and depends on every input.
    #[test]
    fn argon2id_is_the_plain_derivation_and_depends_on_every_input() {
        let salt = [7u8; 16];
        let base = argon2id(b"correct horse", &salt, 64, 2, 1).unwrap();
        assert_eq!(
            base,
            derive(b"correct horse", &salt, &[], &[], 64, 2, 1).unwrap()
        );
        assert_ne!(base, argon2id(b"correct horsf", &salt, 64, 2, 1).unwrap());
        assert_ne!(
            base,
            argon2id(b"correct horse", &[8u8; 16], 64, 2, 1).unwrap()
        );
        assert_ne!(base, argon2id(b"correct horse", &salt, 72, 2, 1).unwrap());
        assert_ne!(base, argon2id(b"correct horse", &salt, 64, 3, 1).unwrap());
        assert_ne!(base, argon2id(b"correct horse", &salt, 64, 2, 2).unwrap());
        // An empty passphrase is Argon2's business, not a bound: it derives a key.
        assert!(argon2id(b"", &salt, 64, 1, 1).is_ok());
    }

    #[test]
    fn parameters_out_of_bounds_are_refused_before_any_work() {
        let salt = [0u8; 16];
        let refused = |m, t, p, salt: &[u8]| {
            matches!(argon2id(b"pw", salt, m, t, p), Err(KdfError::Bounds(_)))
        };
        // Memory: above 256 MiB (a hostile header asking for gigabytes), below 8 KiB per lane.
        assert!(refused(MAX_MEMORY_KIB + 1, 1, 1, &salt));
        assert!(refused(u32::MAX, 1, 1, &salt));
        assert!(refused(7, 1, 1, &salt));
        assert!(refused(31, 1, 4, &salt));
        // Passes and lanes.
        assert!(refused(64, 0, 1, &salt));
        assert!(refused(64, MAX_PASSES + 1, 1, &salt));
        assert!(refused(64, u32::MAX, 1, &salt));
        assert!(refused(64, 1, 0, &salt));
        assert!(refused(1024, 1, MAX_LANES + 1, &salt));
        // Salts too short or too long.
        assert!(refused(64, 1, 1, &[0u8; 15]));
        assert!(refused(64, 1, 1, &[0u8; 65]));
        assert!(refused(64, 1, 1, &[]));
        // The edges themselves are accepted.
        assert!(check_params(16, MAX_MEMORY_KIB, MAX_PASSES, MAX_LANES).is_ok());
        assert!(check_params(64, 8, 1, 1).is_ok());
        assert!(argon2id(b"pw", &[0u8; 64], 8, 1, 1).is_ok());
    }
}
