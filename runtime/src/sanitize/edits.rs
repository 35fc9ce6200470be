//! The replacements one redaction pass makes, and how they are applied: in place in the text the
//! previous passes produced, so that a redaction holds one copy of its text however many passes
//! change it.

use std::borrow::Cow;
use std::ops::Range;

/// One replacement a pass makes: bytes `start..end` of its input become `with`.
#[derive(Debug)]
pub(super) struct Edit {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) with: Cow<'static, str>,
}

/// `text` with `edits` (listed in order, without overlaps) made. A borrowed text is copied once,
/// with [`headroom`] for the passes after; an owned one is edited in place, its buffer growing
/// (exactly) only when a pass lengthens it past that headroom.
pub(super) fn apply<'t>(text: Cow<'t, str>, edits: &[Edit]) -> Cow<'t, str> {
    let Some(len) = edited_len(&text, edits) else {
        // Not in order or not on character boundaries, which no pass makes; copied as the
        // passes always did, which skips such an edit's text.
        return Cow::Owned(copied(&text, edits, text.len()));
    };
    match text {
        Cow::Borrowed(text) => Cow::Owned(copied(text, edits, len + headroom(len))),
        Cow::Owned(text) => Cow::Owned(in_place(text, edits, len)),
    }
}

/// Room for later passes to lengthen the text (`/home/a/` becomes `/home/<redacted>/`, `ses_1`
/// becomes `[redacted-id]`) in place, without a second buffer while the first is copied over.
fn headroom(len: usize) -> usize {
    len / 32 + 64
}

/// The length of `text` after `edits`, when they are in order, without overlaps and on
/// character boundaries.
fn edited_len(text: &str, edits: &[Edit]) -> Option<usize> {
    let mut last = 0;
    let mut len = text.len();
    for edit in edits {
        let in_order = last <= edit.start && edit.start <= edit.end;
        if !in_order || !text.is_char_boundary(edit.start) || !text.is_char_boundary(edit.end) {
            return None;
        }
        len = len - (edit.end - edit.start) + edit.with.len();
        last = edit.end;
    }
    Some(len)
}

fn copied(text: &str, edits: &[Edit], capacity: usize) -> String {
    let mut out = String::with_capacity(capacity);
    let mut last = 0;
    for edit in edits {
        out.push_str(text.get(last..edit.start).unwrap_or(""));
        out.push_str(&edit.with);
        last = edit.end;
    }
    out.push_str(text.get(last..).unwrap_or(""));
    out
}

/// Makes `edits` (checked by [`edited_len`], which gave `len`) in `text`'s own buffer. The kept
/// pieces between edits move: those that move left first to last, then those that move right
/// last to first, so that no piece is overwritten before it has moved; the replacements are
/// written last, into the gaps.
fn in_place(text: String, edits: &[Edit], len: usize) -> String {
    let old_len = text.len();
    let mut bytes = text.into_bytes();
    if len > old_len {
        bytes.reserve_exact(len - old_len);
        bytes.resize(len, 0);
    }
    let (mut from, mut to) = (0, 0);
    for edit in edits {
        if to <= from {
            move_piece(&mut bytes, from..edit.start, to);
        }
        to += edit.start - from + edit.with.len();
        from = edit.end;
    }
    if to <= from {
        move_piece(&mut bytes, from..old_len, to);
    }
    let (mut from_end, mut to_end) = (old_len, len);
    for edit in edits.iter().rev() {
        let to = to_end - (from_end - edit.end);
        if to > edit.end {
            move_piece(&mut bytes, edit.end..from_end, to);
        }
        to_end = to - edit.with.len();
        from_end = edit.start;
    }
    let (mut from, mut to) = (0, 0);
    for edit in edits {
        to += edit.start - from;
        if let Some(gap) = bytes.get_mut(to..to + edit.with.len()) {
            gap.copy_from_slice(edit.with.as_bytes());
        }
        to += edit.with.len();
        from = edit.end;
    }
    bytes.truncate(len);
    // Every piece and replacement is whole UTF-8, cut on character boundaries
    // (`edited_len`), so this never fails; lossy rather than a panic if it ever did.
    String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// Moves bytes `piece` of `bytes` to start at `to` (both inside it, as [`in_place`] computes
/// them).
fn move_piece(bytes: &mut [u8], piece: Range<usize>, to: usize) {
    if piece.start <= piece.end && piece.end <= bytes.len() && to + piece.len() <= bytes.len() {
        bytes.copy_within(piece, to);
    }
}

/// The spans the replacements of `edits` take in the text they produce.
pub(super) fn replaced(edits: &[Edit]) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut shift: isize = 0;
    edits.iter().map(move |edit| {
        let start = edit.start.saturating_add_signed(shift);
        shift += edit.with.len() as isize - (edit.end - edit.start) as isize;
        start..start + edit.with.len()
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Edits from (gap before, replaced length, replacement) triples over `text`'s length.
    fn edits_over(len: usize, plan: &[(usize, usize, String)]) -> Vec<Edit> {
        let mut edits = Vec::new();
        let mut at = 0;
        for (gap, replaced, with) in plan {
            let start = at + gap;
            let end = start + replaced;
            if end > len {
                break;
            }
            edits.push(Edit {
                start,
                end,
                with: Cow::Owned(with.clone()),
            });
            at = end;
        }
        edits
    }

    proptest! {
        // In place and copied agree, whether the edits lengthen, shorten or both.
        #[test]
        fn editing_in_place_is_editing_a_copy(
            text in "[a-z]{0,80}",
            plan in prop::collection::vec((0usize..10, 0usize..10, "[A-Z*]{0,14}"), 0..8),
        ) {
            let edits = edits_over(text.len(), &plan);
            let expected = copied(&text, &edits, 0);
            let in_place = apply(Cow::Owned(text.clone()), &edits);
            prop_assert_eq!(&in_place, &expected);
            let from_borrowed = apply(Cow::Borrowed(&text), &edits);
            prop_assert_eq!(&from_borrowed, &expected);
        }
    }

    #[test]
    fn edits_off_character_boundaries_are_copied_as_before() {
        let text = "aé b";
        let edits = [Edit {
            start: 2,
            end: 3,
            with: Cow::Borrowed("X"),
        }];
        // The old copy skipped the piece before an edit that starts inside a character.
        assert_eq!(apply(Cow::Owned(text.to_owned()), &edits), "X b");
    }
}
