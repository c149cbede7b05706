//! `--constraint` expressions: features joined with `&` (AND, also `,`) and
//! `|` (OR); `&` binds tighter. Brackets (`[a|b]`, matching OR) are read as
//! plain OR for now; counts (`a*2`) are refused.

/// OR of ANDs of feature names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Constraint {
    pub any_of: Vec<Vec<String>>,
}

impl Constraint {
    pub fn matches(&self, features: &[String]) -> bool {
        self.any_of
            .iter()
            .any(|all| all.iter().all(|f| features.iter().any(|h| h == f)))
    }

    /// Every feature named anywhere in the expression.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.any_of.iter().flatten().map(String::as_str)
    }
}

pub fn parse_constraint(s: &str) -> Result<Option<Constraint>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    let cleaned: String = s.chars().filter(|c| !matches!(c, '[' | ']')).collect();
    let mut any_of = Vec::new();
    for alt in cleaned.split('|') {
        let mut all = Vec::new();
        for f in alt.split(['&', ',']) {
            let f = f.trim();
            if f.is_empty()
                || !f
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.:".contains(c))
            {
                return Err(format!("Invalid feature specification: {s}"));
            }
            all.push(f.to_string());
        }
        any_of.push(all);
    }
    Ok(Some(Constraint { any_of }))
}
