//! The validation error tree, printed like `opm validate` prints it:
//!
//! ```text
//! invalid index:
//! └── invalid package "foo":
//!     ├── invalid channel "alpha":
//!     │   └── multiple channel heads found in graph: foo.v1, foo.v2
//!     └── default channel "beta" not found in channels list
//! ```

use std::fmt;

/// One problem, possibly with nested problems (a package, channel or bundle node).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// What is wrong (for a node: which object, e.g. `invalid package "foo"`).
    pub message: String,
    /// Nested problems.
    pub children: Vec<Problem>,
}

impl Problem {
    /// A problem without nested problems.
    pub fn leaf(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            children: Vec::new(),
        }
    }

    /// A node; `None` when it has no nested problems.
    pub fn node(message: impl Into<String>, children: Vec<Problem>) -> Option<Self> {
        (!children.is_empty()).then(|| Self {
            message: message.into(),
            children,
        })
    }

    fn render(&self, prefix: &str, last: bool, out: &mut String) {
        out.push_str(prefix);
        out.push_str(&self.message);
        out.push_str(if self.children.is_empty() {
            "\n"
        } else {
            ":\n"
        });
        for (i, child) in self.children.iter().enumerate() {
            let mut sub = String::from(prefix);
            if prefix.chars().count() >= 4 {
                let cut = prefix.char_indices().rev().nth(3).map_or(0, |(at, _)| at);
                sub.truncate(cut);
                sub.push_str(if last { "    " } else { "│   " });
            }
            let sub_last = i + 1 == self.children.len();
            sub.push_str(if sub_last { "└── " } else { "├── " });
            child.render(&sub, sub_last, out);
        }
    }

    fn walk<'a>(&'a self, visit: &mut dyn FnMut(&'a Problem)) {
        visit(self);
        for child in &self.children {
            child.walk(visit);
        }
    }
}

/// Everything wrong with a catalog, as one tree rooted at `invalid index`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    root: Problem,
}

impl ValidationError {
    /// Wraps the top-level problems; `None` when there are none.
    pub fn from_problems(problems: Vec<Problem>) -> Option<Self> {
        Problem::node("invalid index", problems).map(|root| Self { root })
    }

    /// The top-level problems (catalog-wide ones and one node per invalid package).
    pub fn problems(&self) -> &[Problem] {
        &self.root.children
    }

    /// Whether some problem or node in the tree has exactly this message.
    pub fn contains(&self, message: &str) -> bool {
        let mut found = false;
        self.root.walk(&mut |p| found |= p.message == message);
        found
    }

    /// The messages of all leaves, each prefixed by its nodes (`a: b: message`), in order.
    pub fn leaves(&self) -> Vec<String> {
        fn collect(p: &Problem, path: &mut Vec<String>, out: &mut Vec<String>) {
            if p.children.is_empty() {
                let mut line = path.join(": ");
                if !line.is_empty() {
                    line.push_str(": ");
                }
                line.push_str(&p.message);
                out.push(line);
                return;
            }
            path.push(p.message.clone());
            for child in &p.children {
                collect(child, path, out);
            }
            path.pop();
        }
        let mut out = Vec::new();
        for child in &self.root.children {
            collect(child, &mut Vec::new(), &mut out);
        }
        out
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.root.render("", true, &mut out);
        f.write_str(out.trim())
    }
}

impl std::error::Error for ValidationError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_opm() {
        let error = ValidationError::from_problems(vec![
            Problem::leaf("duplicate package \"a\""),
            Problem::node(
                "invalid package \"foo\"",
                vec![
                    Problem::node(
                        "invalid channel \"alpha\"",
                        vec![Problem::leaf("no channel head found in graph")],
                    )
                    .unwrap(),
                    Problem::node(
                        "invalid bundle \"foo.v1\"",
                        vec![Problem::leaf("x"), Problem::leaf("y")],
                    )
                    .unwrap(),
                ],
            )
            .unwrap(),
        ])
        .unwrap();
        assert_eq!(
            error.to_string(),
            "invalid index:\n├── duplicate package \"a\"\n└── invalid package \"foo\":\n    ├── invalid channel \"alpha\":\n    │   └── no channel head found in graph\n    └── invalid bundle \"foo.v1\":\n        ├── x\n        └── y"
        );
        assert!(error.contains("no channel head found in graph"));
        assert_eq!(
            error.leaves()[1],
            "invalid package \"foo\": invalid channel \"alpha\": no channel head found in graph"
        );
        assert_eq!(ValidationError::from_problems(vec![]), None);
    }

    #[test]
    fn matches_the_published_opm_aggregate() {
        // declcfg_to_model_test.go "Error/PackageNonExistentDefaultChannel".
        let error = ValidationError::from_problems(vec![
            Problem::node(
                "invalid package \"foo\"",
                vec![
                    Problem::node(
                        "invalid channel \"bar\"",
                        vec![Problem::leaf("channel must contain at least one bundle")],
                    )
                    .unwrap(),
                ],
            )
            .unwrap(),
        ])
        .unwrap();
        assert_eq!(
            error.to_string(),
            "invalid index:\n\u{2514}\u{2500}\u{2500} invalid package \"foo\":\n    \u{2514}\u{2500}\u{2500} invalid channel \"bar\":\n        \u{2514}\u{2500}\u{2500} channel must contain at least one bundle"
        );
    }
}
