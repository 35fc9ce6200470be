//! The bundle writer: the one place that stamps the format. It takes only what the compiler
//! knows (the catalogue's name and version, the compiler's version, the source-manifest hash,
//! the catalogue model and the serialized automata) and stamps the format version, the minimum
//! reader version, the regex-automata serialization family and the content hash itself, so that
//! no producer can write a bundle whose framing this reader would misjudge. It also derives the
//! prefilter's literal table from the model (format 9), so that no producer can write a table
//! that disagrees with the model's literals.

use super::model::CatalogueModel;
use super::wire::{
    ENDIANNESS_LITTLE, FIXED_HEADER, FORMAT_VERSION, HASH_RANGE, MAGIC, READER_VERSION,
    REGEX_AUTOMATA_FAMILY, content_hash,
};

/// Why a bundle could not be written: a part too large for the format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot write the bundle: {0}")]
pub struct WriteError(Repr);

/// What could not be written. Private, so that the details can grow without breaking a caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Repr {
    #[error("{0} is too long")]
    TooLong(&'static str),
    #[error("too many sections")]
    TooManySections,
    #[error("catalogue model: {0}")]
    Model(String),
    #[error("the content hash cannot be computed")]
    Hash,
}

/// What the compiler knows of a bundle: everything the writer does not stamp itself.
#[derive(Debug, Clone, Copy)]
pub struct BundleContents<'a> {
    /// The catalogue's name.
    pub catalogue_name: &'a str,
    /// The catalogue's version.
    pub catalogue_version: &'a str,
    /// The version of the compiler that built the bundle.
    pub compiler_version: &'a str,
    /// SHA-256 of the catalogue sources.
    pub manifest_hash: [u8; 32],
    /// The catalogue model.
    pub model: &'a CatalogueModel,
    /// The automata, each serialized by regex-automata (little-endian), in section order: the
    /// model's `DfaEntry::section` 1 is the first.
    pub automata: &'a [Vec<u8>],
}

fn pad_to_8(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
}

/// Writes a bundle. Deterministic: the output depends only on `contents` (and on this crate's
/// format and serialization versions, which it stamps).
pub fn write(contents: &BundleContents<'_>) -> Result<Vec<u8>, WriteError> {
    let model = postcard::to_allocvec(contents.model)
        .map_err(|error| WriteError(Repr::Model(error.to_string())))?;
    let literal_table = super::prefilter::literal_table_section(contents.model);
    let sections: Vec<&[u8]> = std::iter::once(model.as_slice())
        .chain(contents.automata.iter().map(Vec::as_slice))
        .chain(std::iter::once(literal_table.as_slice()))
        .collect();
    let mut strings = Vec::new();
    for (what, text) in [
        ("catalogue name", contents.catalogue_name),
        ("catalogue version", contents.catalogue_version),
        ("compiler version", contents.compiler_version),
        ("regex-automata version", REGEX_AUTOMATA_FAMILY),
    ] {
        let len = u16::try_from(text.len()).map_err(|_| WriteError(Repr::TooLong(what)))?;
        strings.extend_from_slice(&len.to_le_bytes());
        strings.extend_from_slice(text.as_bytes());
    }
    let header_len = (FIXED_HEADER + strings.len()).next_multiple_of(8);
    let section_count =
        u32::try_from(sections.len()).map_err(|_| WriteError(Repr::TooManySections))?;
    let mut body = vec![0u8; sections.len() * 16];
    let mut table = Vec::with_capacity(sections.len() * 16);
    for section in &sections {
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
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&READER_VERSION.to_le_bytes());
    out.extend_from_slice(&[ENDIANNESS_LITTLE, 0, 0, 0]);
    out.extend_from_slice(
        &u32::try_from(header_len)
            .map_err(|_| WriteError(Repr::TooLong("header")))?
            .to_le_bytes(),
    );
    out.extend_from_slice(&section_count.to_le_bytes());
    // Zero for now: the hash covers the rest of the file, which is not written yet.
    out.extend_from_slice(&[0; HASH_RANGE.end - HASH_RANGE.start]);
    out.extend_from_slice(&contents.manifest_hash);
    out.extend_from_slice(&strings);
    out.resize(header_len, 0);
    out.extend_from_slice(&body);
    let hash = content_hash(&out).map_err(|_| WriteError(Repr::Hash))?;
    if let Some(field) = out.get_mut(HASH_RANGE) {
        field.copy_from_slice(&hash);
    }
    Ok(out)
}
