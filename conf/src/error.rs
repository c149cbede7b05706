//! Errors and warnings produced while reading configuration files.
//!
//! Both print as `{file}:{line}: {key}: {message}`. Line 0 means the problem
//! concerns the whole file (for example it could not be read). When no key is
//! involved (a syntax error before any key was recognised) the `{key}: ` part
//! is left out.

use std::fmt;

/// A fatal configuration problem: the file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfError {
    pub file: String,
    pub line: usize,
    pub key: String,
    pub message: String,
}

/// A non-fatal configuration problem (unknown key, overridden value, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfWarning {
    pub file: String,
    pub line: usize,
    pub key: String,
    pub message: String,
}

fn write_located(
    f: &mut fmt::Formatter<'_>,
    file: &str,
    line: usize,
    key: &str,
    message: &str,
) -> fmt::Result {
    if key.is_empty() {
        write!(f, "{file}:{line}: {message}")
    } else {
        write!(f, "{file}:{line}: {key}: {message}")
    }
}

impl ConfError {
    pub fn new(
        file: impl Into<String>,
        line: usize,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ConfError {
            file: file.into(),
            line,
            key: key.into(),
            message: message.into(),
        }
    }

    /// A whole-file I/O problem (line 0, no key).
    pub fn io(file: impl Into<String>, err: &std::io::Error) -> Self {
        ConfError::new(file, 0, "", err.to_string())
    }
}

impl ConfWarning {
    pub fn new(
        file: impl Into<String>,
        line: usize,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ConfWarning {
            file: file.into(),
            line,
            key: key.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_located(f, &self.file, self.line, &self.key, &self.message)
    }
}

impl fmt::Display for ConfWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_located(f, &self.file, self.line, &self.key, &self.message)
    }
}

impl std::error::Error for ConfError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_with_key() {
        let e = ConfError::new("/tmp/x/drover.conf", 12, "CPUs", "invalid number 'abc'");
        assert_eq!(
            e.to_string(),
            "/tmp/x/drover.conf:12: CPUs: invalid number 'abc'"
        );
        let w = ConfWarning::new("a.conf", 3, "Foo", "unknown key, ignored");
        assert_eq!(w.to_string(), "a.conf:3: Foo: unknown key, ignored");
    }

    #[test]
    fn display_without_key() {
        let e = ConfError::new("a.conf", 0, "", "No such file");
        assert_eq!(e.to_string(), "a.conf:0: No such file");
    }

    #[test]
    fn io_error_is_line_zero() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e = ConfError::io("g.conf", &io);
        assert_eq!(e.line, 0);
        assert!(e.to_string().starts_with("g.conf:0: "));
    }
}
