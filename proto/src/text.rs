//! User-set text made safe for a terminal: every control character (escape
//! sequences, newlines, carriage returns, tabs, DEL, C1 controls) prints as
//! `?`, so a job name or comment can neither drive the terminal nor forge an
//! output line. The one helper every command uses for text output; JSON
//! output keeps the real string (escaped by the JSON writer).

use std::borrow::Cow;

/// `c`, or `?` for a control character.
pub fn printable_char(c: char) -> char {
    if c.is_control() {
        '?'
    } else {
        c
    }
}

/// `s` with control characters as `?` (borrowed when there are none).
pub fn printable(s: &str) -> Cow<'_, str> {
    if s.chars().any(char::is_control) {
        Cow::Owned(s.chars().map(printable_char).collect())
    } else {
        Cow::Borrowed(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_become_question_marks() {
        assert_eq!(printable("plain name-1.x"), "plain name-1.x");
        assert!(matches!(printable("plain"), Cow::Borrowed(_)));
        assert_eq!(printable("\x1b[31mred\n2\r\t\x7f"), "?[31mred?2???");
        assert_eq!(printable("\u{9b}31m é"), "?31m é");
        assert_eq!(printable_char('\n'), '?');
        assert_eq!(printable_char('a'), 'a');
    }
}
