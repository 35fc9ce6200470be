//! What an agent's terminal interface draws around a message: a box's borders and a status
//! mark opening the line. A user who copies an error from the terminal into a report copies
//! these too.

use super::{BLANKS, has_text};

/// The marks agents' terminal interfaces open a message's line with: status glyphs (Claude
/// Code's `⎿` under a tool call and `⏺`/`●` before a message, `✻` on its retry line, Gemini
/// CLI's `✕`, Codex's `■`, the crosses, warning and stop signs of others) and tree branches.
/// A list's bullets (`•`, `-`, `*`) are not among them (see [`super::without_report_markers`]).
const TERMINAL_MARKS: [char; 17] = [
    '⎿', '⏺', '●', '✻', '✕', '✗', '✘', '✖', '×', '⨯', '■', '⚠', '❌', '⛔', '└', '├', '╰',
];

/// The vertical borders of a box a terminal interface frames a message in (`│ … │`).
const BOX_BORDERS: [char; 3] = ['│', '┃', '║'];

/// `line` without what an agent's terminal interface draws around a message: a box's border on
/// the left (and then the one closing the line on the right), then a status mark
/// ([`TERMINAL_MARKS`], followed by a blank, an emoji's variation selector allowed). Copied
/// from a terminal into a report, an error keeps them: the classification fixtures hold 252
/// lines of real errors opening with `⎿`, 167 with `✕`, 129 inside a box's border.
pub(super) fn without_terminal_marks(line: &str) -> &str {
    let mut rest = line;
    let opening = rest.trim_start_matches(BLANKS);
    if let Some(inside) = opening.strip_prefix(BOX_BORDERS) {
        let inside = inside.trim_end_matches(BLANKS);
        let inside = inside.strip_suffix(BOX_BORDERS).unwrap_or(inside);
        if !has_text(inside) {
            return line;
        }
        rest = inside.trim_matches(BLANKS);
    }
    // One mark: a second one is the message's own (`⎿  ✗ Quota exceeded`: Copilot's cross,
    // under Claude Code's tool-call branch), which rules may name.
    match rest
        .trim_start_matches(BLANKS)
        .strip_prefix(TERMINAL_MARKS)
        .map(|after| after.strip_prefix('\u{fe0f}').unwrap_or(after))
    {
        Some(after) if after.starts_with(BLANKS) && has_text(after) => {
            after.trim_start_matches(BLANKS)
        }
        _ => rest,
    }
}

/// Whether `byte`, a line's first byte other than a blank, may open a terminal mark or a box's
/// border (all of them are encoded from `0xE2`, but `×` from `0xC3`).
pub(super) fn may_open_terminal_mark(byte: u8) -> bool {
    matches!(byte, 0xE2 | 0xC3)
}
