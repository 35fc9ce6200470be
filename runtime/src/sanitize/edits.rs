//! The replacements one redaction pass makes, and how they are applied.

use std::borrow::Cow;

/// One replacement a pass makes: bytes `start..end` of its input become `with`.
#[derive(Debug)]
pub(super) struct Edit {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) with: Cow<'static, str>,
}

/// `text` with `edits` (listed in order, without overlaps) made: one copy.
pub(super) fn apply<'t>(text: Cow<'t, str>, edits: &[Edit]) -> Cow<'t, str> {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for edit in edits {
        out.push_str(text.get(last..edit.start).unwrap_or(""));
        out.push_str(&edit.with);
        last = edit.end;
    }
    out.push_str(text.get(last..).unwrap_or(""));
    Cow::Owned(out)
}

/// Where byte offset `mark` of a pass's input lands in its output. An offset inside a replaced
/// span lands after its replacement: text read from a mark on never starts inside a redacted
/// value, nor with the marker of a value that began before it.
pub(super) fn moved(mark: usize, edits: &[Edit]) -> usize {
    let (mut added, mut removed) = (0, 0);
    for edit in edits {
        if edit.end <= mark {
            added += edit.with.len();
            removed += edit.end - edit.start;
        } else if edit.start < mark {
            return edit.start + added - removed + edit.with.len();
        } else {
            break;
        }
    }
    mark + added - removed
}
