//! The bundle file format: reading (every byte validated) and writing (deterministic).
//!
//! ```text
//! offset  size  field
//!      0     8  magic "FLBUNDLE"                      ┐ the versioned prefix: the same in
//!      8     2  format version (u16 LE)              │ every format version, so any reader
//!     10     2  minimum reader version (u16 LE)      ┘ can refuse a file it cannot read
//!     12     1  endianness of the automata (1 = little)
//!     13     3  reserved, zero
//!     16     4  header length H (u32 LE, a multiple of 8)
//!     20     4  section count S (u32 LE)
//!     24    32  content hash: SHA-256 of every byte of the file except these 32, that is of
//!               bytes 0..24 followed by bytes 56..end (format 3; format 2 hashed H..end only)
//!     56    32  source-manifest hash: SHA-256 of the catalogue sources
//!     88     …  four strings, each u16 LE length + UTF-8: catalogue name, catalogue version,
//!               compiler version, regex-automata version; zero padding up to H
//!      H  16·S  section table: (offset u64 LE from H, length u64 LE) per section
//!      …     …  sections, each starting at an offset that is a multiple of 8 from the file
//!               start: section 0 is the catalogue model (postcard), sections 1.. are dense
//!               DFAs in regex-automata's little-endian serialization
//! ```
//!
//! The reader checks the versioned prefix first (so that a file of another format gets
//! `TooNew`/`TooOld`, not a hash mismatch), then the content hash, and only then interprets any
//! other byte: a file that passes the hash check is byte for byte the file the compiler wrote,
//! or was rewritten on purpose (the hash detects corruption; it is not a signature). The rest of
//! the validation is there for such deliberately rewritten files.

use sha2::{Digest, Sha256};

use super::BundleError;

/// The magic bytes that start every bundle.
pub const MAGIC: [u8; 8] = *b"FLBUNDLE";
/// The format version this crate writes.
pub const FORMAT_VERSION: u16 = 3;
/// The oldest format version this crate reads. Format 2's content hash left the header out.
pub const OLDEST_READABLE_VERSION: u16 = 3;
/// The reader version of this crate: bundles whose minimum reader version is newer are refused.
/// The compiler writes it as the minimum reader version of every bundle, so that a reader of
/// version 1 (which checked format 2's narrower hash) refuses format 3 as too new.
pub const READER_VERSION: u16 = 2;
/// Where the content hash lies in the file. The hash covers every other byte.
pub const HASH_RANGE: std::ops::Range<usize> = 24..56;
/// The regex-automata serialization family the automata use.
pub const REGEX_AUTOMATA_FAMILY: &str = "0.4";

const FIXED_HEADER: usize = 88;
const ENDIANNESS_LITTLE: u8 = 1;
/// Upper bound on sections, so a corrupt count cannot make the reader allocate wildly.
const MAX_SECTIONS: u32 = 4096;

/// The header of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Format version.
    pub format_version: u16,
    /// Minimum reader version.
    pub min_reader_version: u16,
    /// SHA-256 of every byte of the file but this field's ([`HASH_RANGE`]). [`write()`] computes
    /// it and ignores the value given.
    pub content_hash: [u8; 32],
    /// SHA-256 of the catalogue sources.
    pub manifest_hash: [u8; 32],
    /// Catalogue name.
    pub catalogue_name: String,
    /// Catalogue version.
    pub catalogue_version: String,
    /// Version of the compiler that built the bundle.
    pub compiler_version: String,
    /// Version of regex-automata that serialized the automata.
    pub regex_automata_version: String,
}

/// A parsed bundle: its header and its sections, as byte ranges of the input.
#[derive(Debug)]
pub struct RawBundle<'a> {
    /// The header.
    pub header: Header,
    /// The sections' bytes.
    pub sections: Vec<&'a [u8]>,
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, len: usize, what: &str) -> Result<&'a [u8], BundleError> {
        let end = self
            .at
            .checked_add(len)
            .ok_or_else(|| BundleError::malformed(format!("{what}: length overflows")))?;
        let slice = self.bytes.get(self.at..end).ok_or(BundleError::Truncated {
            needed: end,
            len: self.bytes.len(),
        })?;
        self.at = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], BundleError> {
        let slice = self.take(N, what)?;
        let mut out = [0; N];
        out.copy_from_slice(slice);
        Ok(out)
    }

    fn u16(&mut self, what: &str) -> Result<u16, BundleError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    fn u32(&mut self, what: &str) -> Result<u32, BundleError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, BundleError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn string(&mut self, what: &str) -> Result<String, BundleError> {
        let len = usize::from(self.u16(what)?);
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| BundleError::malformed(format!("{what} is not UTF-8")))
    }
}

/// The content hash of a bundle: SHA-256 of every byte except the hash field itself
/// ([`HASH_RANGE`]), so that a change to any other byte, header or body, changes it.
pub fn content_hash(bytes: &[u8]) -> Result<[u8; 32], BundleError> {
    let truncated = || BundleError::Truncated {
        needed: HASH_RANGE.end,
        len: bytes.len(),
    };
    let before = bytes.get(..HASH_RANGE.start).ok_or_else(truncated)?;
    let after = bytes.get(HASH_RANGE.end..).ok_or_else(truncated)?;
    let mut hasher = Sha256::new();
    hasher.update(before);
    hasher.update(after);
    Ok(hasher.finalize().into())
}

/// Parses and validates the framing of a bundle: magic, versions, content hash, endianness,
/// header, section table. The sections' contents are validated by the caller.
pub fn read(bytes: &[u8]) -> Result<RawBundle<'_>, BundleError> {
    let mut cursor = Cursor { bytes, at: 0 };
    if cursor.array::<8>("magic")? != MAGIC {
        return Err(BundleError::BadMagic);
    }
    // The versioned prefix is read before the hash is checked: how the rest of the file is laid
    // out, the hash included, depends on the format.
    let format_version = cursor.u16("format version")?;
    let min_reader_version = cursor.u16("minimum reader version")?;
    if min_reader_version > READER_VERSION {
        return Err(BundleError::TooNew {
            format_version,
            min_reader_version,
            reader_version: READER_VERSION,
        });
    }
    if format_version < OLDEST_READABLE_VERSION {
        return Err(BundleError::TooOld {
            format_version,
            oldest_readable: OLDEST_READABLE_VERSION,
        });
    }
    if bytes.len() < FIXED_HEADER {
        return Err(BundleError::Truncated {
            needed: FIXED_HEADER,
            len: bytes.len(),
        });
    }
    // No other byte is interpreted before the hash is known to cover it as written.
    let stored_hash: [u8; 32] = bytes
        .get(HASH_RANGE)
        .and_then(|field| field.try_into().ok())
        .ok_or(BundleError::Truncated {
            needed: HASH_RANGE.end,
            len: bytes.len(),
        })?;
    if content_hash(bytes)? != stored_hash {
        return Err(BundleError::HashMismatch);
    }
    let endianness = cursor.array::<4>("endianness")?;
    if endianness != [ENDIANNESS_LITTLE, 0, 0, 0] {
        return Err(BundleError::malformed(
            "the automata are not little-endian, or reserved bytes are set",
        ));
    }
    if cfg!(target_endian = "big") {
        return Err(BundleError::malformed(
            "this reader runs on a big-endian machine; bundles are little-endian",
        ));
    }
    let header_len = usize::try_from(cursor.u32("header length")?)
        .map_err(|_| BundleError::malformed("header length"))?;
    let section_count = cursor.u32("section count")?;
    // Already checked above, as part of the whole file.
    cursor.take(HASH_RANGE.len(), "content hash")?;
    let manifest_hash = cursor.array::<32>("manifest hash")?;
    if header_len % 8 != 0 || header_len < FIXED_HEADER {
        return Err(BundleError::malformed(format!(
            "header length {header_len} is not a multiple of 8 of at least {FIXED_HEADER}"
        )));
    }
    if bytes.len() < header_len {
        return Err(BundleError::Truncated {
            needed: header_len,
            len: bytes.len(),
        });
    }
    let body = bytes.get(header_len..).unwrap_or_default();
    let header = Header {
        format_version,
        min_reader_version,
        content_hash: stored_hash,
        manifest_hash,
        catalogue_name: cursor.string("catalogue name")?,
        catalogue_version: cursor.string("catalogue version")?,
        compiler_version: cursor.string("compiler version")?,
        regex_automata_version: cursor.string("regex-automata version")?,
    };
    if cursor.at > header_len
        || bytes
            .get(cursor.at..header_len)
            .is_some_and(|pad| pad.iter().any(|b| *b != 0))
    {
        return Err(BundleError::malformed(
            "header strings overrun the header, or its padding is not zero",
        ));
    }
    if !header
        .regex_automata_version
        .starts_with(REGEX_AUTOMATA_FAMILY)
    {
        return Err(BundleError::RegexAutomataVersion {
            bundle: header.regex_automata_version,
            runtime: REGEX_AUTOMATA_FAMILY,
        });
    }
    if section_count == 0 || section_count > MAX_SECTIONS {
        return Err(BundleError::malformed(format!(
            "section count {section_count} is not in 1..={MAX_SECTIONS}"
        )));
    }
    let mut table = Cursor { bytes: body, at: 0 };
    let mut sections = Vec::new();
    // Sections start after the table.
    let mut previous_end = usize::try_from(section_count)
        .unwrap_or(usize::MAX)
        .saturating_mul(16);
    for index in 0..section_count {
        let offset = usize::try_from(table.u64("section offset")?)
            .map_err(|_| BundleError::malformed("section offset"))?;
        let len = usize::try_from(table.u64("section length")?)
            .map_err(|_| BundleError::malformed("section length"))?;
        let end = offset
            .checked_add(len)
            .ok_or_else(|| BundleError::malformed("section end overflows"))?;
        // The header length is a multiple of 8, so the offset alone decides alignment.
        if offset % 8 != 0 || offset < previous_end {
            return Err(BundleError::malformed(format!(
                "section {index} is misaligned or overlaps the one before"
            )));
        }
        let section = body.get(offset..end).ok_or(BundleError::Truncated {
            needed: header_len.saturating_add(end),
            len: bytes.len(),
        })?;
        sections.push(section);
        previous_end = end;
    }
    if previous_end != body.len() {
        return Err(BundleError::malformed("bytes after the last section"));
    }
    Ok(RawBundle { header, sections })
}

fn pad_to_8(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
}

/// Writes a bundle. The output depends only on the arguments.
pub fn write(header: &Header, sections: &[Vec<u8>]) -> Result<Vec<u8>, BundleError> {
    let mut strings = Vec::new();
    for (what, text) in [
        ("catalogue name", &header.catalogue_name),
        ("catalogue version", &header.catalogue_version),
        ("compiler version", &header.compiler_version),
        ("regex-automata version", &header.regex_automata_version),
    ] {
        let len = u16::try_from(text.len())
            .map_err(|_| BundleError::malformed(format!("{what} is too long")))?;
        strings.extend_from_slice(&len.to_le_bytes());
        strings.extend_from_slice(text.as_bytes());
    }
    let header_len = (FIXED_HEADER + strings.len()).next_multiple_of(8);
    let section_count =
        u32::try_from(sections.len()).map_err(|_| BundleError::malformed("too many sections"))?;
    let mut body = vec![0u8; sections.len() * 16];
    let mut table = Vec::with_capacity(sections.len() * 16);
    for section in sections {
        pad_to_8(&mut body);
        let offset = body.len() as u64;
        table.extend_from_slice(&offset.to_le_bytes());
        table.extend_from_slice(&(section.len() as u64).to_le_bytes());
        body.extend_from_slice(section);
    }
    if let Some(slot) = body.get_mut(..table.len()) {
        slot.copy_from_slice(&table);
    }
    let mut out = Vec::with_capacity(header_len + body.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&header.format_version.to_le_bytes());
    out.extend_from_slice(&header.min_reader_version.to_le_bytes());
    out.extend_from_slice(&[ENDIANNESS_LITTLE, 0, 0, 0]);
    out.extend_from_slice(
        &u32::try_from(header_len)
            .map_err(|_| BundleError::malformed("header too long"))?
            .to_le_bytes(),
    );
    out.extend_from_slice(&section_count.to_le_bytes());
    // Zero for now: the hash covers the rest of the file, which is not written yet.
    out.extend_from_slice(&[0; HASH_RANGE.end - HASH_RANGE.start]);
    out.extend_from_slice(&header.manifest_hash);
    out.extend_from_slice(&strings);
    out.resize(header_len, 0);
    out.extend_from_slice(&body);
    let hash = content_hash(&out)?;
    if let Some(field) = out.get_mut(HASH_RANGE) {
        field.copy_from_slice(&hash);
    }
    Ok(out)
}
