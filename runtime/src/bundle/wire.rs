//! The bundle file format and its reader (every byte validated); the writer is `super::write`.
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
//!               start: section 0 is the catalogue model (postcard), the sections after it
//!               are dense DFAs in regex-automata's little-endian serialization, and the last
//!               (format 9) is the prefilter's literal table (`super::literal_table`), empty
//!               when the bundle carries none
//! ```
//!
//! The reader checks the versioned prefix first (so that a file of another format gets
//! `TooNew`/`TooOld`, not a hash mismatch), then the content hash, and only then interprets any
//! other byte: a file that passes the hash check is byte for byte the file the compiler wrote,
//! or was rewritten on purpose (the hash detects corruption; it is not a signature). The rest of
//! the validation is there for such deliberately rewritten files. Because that validation is
//! complete, the loader may interpret the bytes while another thread checks the hash (hashing
//! is the longest single step of a load): what it reports is what that order gives, since a
//! hash mismatch wins over any error found meanwhile and no bundle is returned before the hash
//! is known to hold.
//!
//! Reading is three steps, in this order: [`read_prefix`], [`verify_hash`], [`read_framing`]
//! (the header and the section table; the sections' contents are validated by the caller).

use sha2::{Digest, Sha256};

use super::error::{LoadError, Repr};

/// The magic bytes that start every bundle.
pub const MAGIC: [u8; 8] = *b"FLBUNDLE";
/// The format version this crate writes.
#[cfg_attr(
    not(feature = "bundle-writer"),
    expect(dead_code, reason = "only the writer stamps it")
)]
pub const FORMAT_VERSION: u16 = 9;
/// The oldest format version this crate reads. Format 2's content hash left the header out.
/// Formats 3 and 4 are still read: format 3's rules could not guard response headers or the
/// error body, and format 4's text matchers could not read the body at a JSON Pointer (issue
/// 12); their models are decoded as such and given no such guards or matchers. Formats 3 to 5
/// carried no recovery policy (issue 14): they are given the reference's defaults. Formats 3 to
/// 6 admitted a gated rule on any one of its literals (issue 16 made them conjuncts): each
/// literal becomes a conjunct of its own, which is what those bundles meant. Formats 3 to 7
/// gave every pattern a DFA; format 8 leaves out those of patterns only gated rules read.
/// Formats 3 to 8 carry no literal table: the loader builds the prefilter's automaton.
pub const OLDEST_READABLE_VERSION: u16 = 3;
/// The reader version of this crate: bundles whose minimum reader version is newer are refused.
/// The writer stamps it as the minimum reader version of every bundle, so that a reader of
/// version 1 (which checked format 2's narrower hash) refuses format 3 as too new, and a reader
/// of version 2 (format 3) refuses format 4 as too new, a reader of version 3 (format 4)
/// refuses format 5 as too new, a reader of version 4 (format 5) refuses format 6 as too new,
/// a reader of version 5 (format 6) refuses format 7 as too new, a reader of version 6
/// (format 7, which expects a DFA for every pattern) refuses format 8 as too new, and a reader
/// of version 7 (format 8, which would read the literal table as a DFA) refuses format 9 as too
/// new.
pub const READER_VERSION: u16 = 8;
/// Where the content hash lies in the file. The hash covers every other byte.
pub const HASH_RANGE: std::ops::Range<usize> = 24..56;
/// The regex-automata serialization family the automata use.
pub const REGEX_AUTOMATA_FAMILY: &str = "0.4";

pub(super) const FIXED_HEADER: usize = 88;
pub(super) const ENDIANNESS_LITTLE: u8 = 1;
/// Upper bound on sections, so a corrupt count cannot make the reader allocate wildly.
const MAX_SECTIONS: u32 = 4096;

/// The header of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Format version.
    pub format_version: u16,
    /// Minimum reader version.
    pub min_reader_version: u16,
    /// SHA-256 of every byte of the file but this field's ([`HASH_RANGE`]).
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
    fn take(&mut self, len: usize, what: &str) -> Result<&'a [u8], LoadError> {
        let end = self
            .at
            .checked_add(len)
            .ok_or_else(|| LoadError::malformed(format!("{what}: length overflows")))?;
        let slice = self
            .bytes
            .get(self.at..end)
            .ok_or(LoadError::truncated(end, self.bytes.len()))?;
        self.at = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], LoadError> {
        let slice = self.take(N, what)?;
        let mut out = [0; N];
        out.copy_from_slice(slice);
        Ok(out)
    }

    fn u16(&mut self, what: &str) -> Result<u16, LoadError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    fn u32(&mut self, what: &str) -> Result<u32, LoadError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, LoadError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn string(&mut self, what: &str) -> Result<String, LoadError> {
        let len = usize::from(self.u16(what)?);
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| LoadError::malformed(format!("{what} is not UTF-8")))
    }
}

/// The content hash of a bundle: SHA-256 of every byte except the hash field itself
/// ([`HASH_RANGE`]), so that a change to any other byte, header or body, changes it.
pub fn content_hash(bytes: &[u8]) -> Result<[u8; 32], LoadError> {
    let truncated = || LoadError::truncated(HASH_RANGE.end, bytes.len());
    let before = bytes.get(..HASH_RANGE.start).ok_or_else(truncated)?;
    let after = bytes.get(HASH_RANGE.end..).ok_or_else(truncated)?;
    let mut hasher = Sha256::new();
    hasher.update(before);
    hasher.update(after);
    Ok(hasher.finalize().into())
}

/// The versioned prefix of a bundle and the hash it stores: what is read before the hash is
/// checked, because how the rest of the file is laid out, the hash included, depends on it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Prefix {
    format_version: u16,
    min_reader_version: u16,
    stored_hash: [u8; 32],
}

/// Reads the versioned prefix: magic, format version, minimum reader version, and the stored
/// content hash (not yet checked).
pub(super) fn read_prefix(bytes: &[u8]) -> Result<Prefix, LoadError> {
    let mut cursor = Cursor { bytes, at: 0 };
    if cursor.array::<8>("magic")? != MAGIC {
        return Err(Repr::BadMagic.into());
    }
    let format_version = cursor.u16("format version")?;
    let min_reader_version = cursor.u16("minimum reader version")?;
    if min_reader_version > READER_VERSION {
        return Err(Repr::TooNew {
            format_version,
            min_reader_version,
            reader_version: READER_VERSION,
        }
        .into());
    }
    if format_version < OLDEST_READABLE_VERSION {
        return Err(Repr::TooOld {
            format_version,
            oldest_readable: OLDEST_READABLE_VERSION,
        }
        .into());
    }
    if bytes.len() < FIXED_HEADER {
        return Err(LoadError::truncated(FIXED_HEADER, bytes.len()));
    }
    let stored_hash: [u8; 32] = bytes
        .get(HASH_RANGE)
        .and_then(|field| field.try_into().ok())
        .ok_or_else(|| LoadError::truncated(HASH_RANGE.end, bytes.len()))?;
    Ok(Prefix {
        format_version,
        min_reader_version,
        stored_hash,
    })
}

/// Checks that the content hash covers the file as written.
pub(super) fn verify_hash(bytes: &[u8], prefix: &Prefix) -> Result<(), LoadError> {
    if content_hash(bytes)? == prefix.stored_hash {
        Ok(())
    } else {
        Err(Repr::HashMismatch.into())
    }
}

/// Reads everything after the prefix but the sections' contents: endianness, header, section
/// table. The loader calls it before the hash is checked (see [`super::Bundle::from_bytes`])
/// and lets a hash mismatch win over any error it finds.
pub(super) fn read_framing<'a>(
    bytes: &'a [u8],
    prefix: &Prefix,
) -> Result<RawBundle<'a>, LoadError> {
    let Prefix {
        format_version,
        min_reader_version,
        stored_hash,
    } = *prefix;
    // After the magic and the two versions.
    let mut cursor = Cursor {
        bytes,
        at: MAGIC.len() + 4,
    };
    let endianness = cursor.array::<4>("endianness")?;
    if endianness != [ENDIANNESS_LITTLE, 0, 0, 0] {
        return Err(LoadError::malformed(
            "the automata are not little-endian, or reserved bytes are set",
        ));
    }
    if cfg!(target_endian = "big") {
        return Err(LoadError::malformed(
            "this reader runs on a big-endian machine; bundles are little-endian",
        ));
    }
    let header_len = usize::try_from(cursor.u32("header length")?)
        .map_err(|_| LoadError::malformed("header length"))?;
    let section_count = cursor.u32("section count")?;
    // The stored hash, read with the prefix and checked by `verify_hash`.
    cursor.take(HASH_RANGE.len(), "content hash")?;
    let manifest_hash = cursor.array::<32>("manifest hash")?;
    if header_len % 8 != 0 || header_len < FIXED_HEADER {
        return Err(LoadError::malformed(format!(
            "header length {header_len} is not a multiple of 8 of at least {FIXED_HEADER}"
        )));
    }
    if bytes.len() < header_len {
        return Err(LoadError::truncated(header_len, bytes.len()));
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
        return Err(LoadError::malformed(
            "header strings overrun the header, or its padding is not zero",
        ));
    }
    if !header
        .regex_automata_version
        .starts_with(REGEX_AUTOMATA_FAMILY)
    {
        return Err(Repr::RegexAutomataVersion {
            bundle: header.regex_automata_version,
            runtime: REGEX_AUTOMATA_FAMILY,
        }
        .into());
    }
    if section_count == 0 || section_count > MAX_SECTIONS {
        return Err(LoadError::malformed(format!(
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
            .map_err(|_| LoadError::malformed("section offset"))?;
        let len = usize::try_from(table.u64("section length")?)
            .map_err(|_| LoadError::malformed("section length"))?;
        let end = offset
            .checked_add(len)
            .ok_or_else(|| LoadError::malformed("section end overflows"))?;
        // The header length is a multiple of 8, so the offset alone decides alignment.
        if offset % 8 != 0 || offset < previous_end {
            return Err(LoadError::malformed(format!(
                "section {index} is misaligned or overlaps the one before"
            )));
        }
        let section = body
            .get(offset..end)
            .ok_or_else(|| LoadError::truncated(header_len.saturating_add(end), bytes.len()))?;
        sections.push(section);
        previous_end = end;
    }
    if previous_end != body.len() {
        return Err(LoadError::malformed("bytes after the last section"));
    }
    Ok(RawBundle { header, sections })
}
