//! Parser for label selector strings (`kubectl -l` syntax), as in apimachinery's
//! `labels.Parse`: requirements joined by `,` (AND), each one of `key`, `!key`, `key=value`,
//! `key==value`, `key!=value`, `key in (v1,v2)`, `key notin (v1,v2)`. Keys and values are
//! validated like the API server does. The numeric `key>n` / `key<n` forms are refused: a
//! selector opcat does not understand must not be guessed at.
//!
//! `kube::core` has the selector model and matcher ([`Selector`], [`Expression`]) but no string
//! parser, so this builds its expressions and reuses its matching.

use std::collections::BTreeSet;

use kube::core::{Expression, Selector};

use super::names::{is_label_key, is_label_value};

/// Why a selector string was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    #[error("the selector is empty")]
    Empty,
    #[error("unexpected end after {after:?}; expected {expected}")]
    UnexpectedEnd {
        after: String,
        expected: &'static str,
    },
    #[error("unexpected {found:?}; expected {expected}")]
    Unexpected {
        found: String,
        expected: &'static str,
    },
    #[error("{key:?} is not a valid label key")]
    InvalidKey { key: String },
    #[error("{value:?} is not a valid label value")]
    InvalidValue { value: String },
    #[error("operator {operator:?} is not supported here")]
    Unsupported { operator: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token<'a> {
    Word(&'a str),
    Not,
    NotEquals,
    Equals,
    Open,
    Close,
    Comma,
    Compare(&'a str),
}

impl Token<'_> {
    fn text(&self) -> String {
        match self {
            Token::Word(word) | Token::Compare(word) => (*word).to_owned(),
            Token::Not => "!".to_owned(),
            Token::NotEquals => "!=".to_owned(),
            Token::Equals => "=".to_owned(),
            Token::Open => "(".to_owned(),
            Token::Close => ")".to_owned(),
            Token::Comma => ",".to_owned(),
        }
    }
}

fn tokenize(text: &str) -> Vec<Token<'_>> {
    let mut tokens = Vec::new();
    let mut rest = text.trim_start();
    while let Some(first) = rest.chars().next() {
        let (token, len) = match first {
            '!' if rest.starts_with("!=") => (Token::NotEquals, 2),
            '!' => (Token::Not, 1),
            '=' if rest.starts_with("==") => (Token::Equals, 2),
            '=' => (Token::Equals, 1),
            '(' => (Token::Open, 1),
            ')' => (Token::Close, 1),
            ',' => (Token::Comma, 1),
            '>' | '<' => (Token::Compare(&rest[..1]), 1),
            _ => {
                let len = rest
                    .find(|c: char| c.is_whitespace() || "!=(),<>".contains(c))
                    .unwrap_or(rest.len());
                (Token::Word(&rest[..len]), len)
            }
        };
        tokens.push(token);
        rest = rest[len..].trim_start();
    }
    tokens
}

/// Parses a selector string. An empty string is refused (apimachinery would read it as "select
/// everything", which is never what a restriction means).
pub fn parse_selector(text: &str) -> Result<Selector, SelectorError> {
    let tokens = tokenize(text);
    if tokens.is_empty() {
        return Err(SelectorError::Empty);
    }
    let mut parser = Parser {
        tokens: &tokens,
        position: 0,
    };
    let mut expressions = Vec::new();
    loop {
        expressions.push(parser.requirement()?);
        match parser.next() {
            None => break,
            Some(Token::Comma) => {}
            other => return Err(parser.unexpected(other, "',' or the end")),
        }
    }
    Ok(expressions.into_iter().collect())
}

struct Parser<'t, 'a> {
    tokens: &'t [Token<'a>],
    position: usize,
}

impl<'a> Parser<'_, 'a> {
    fn next(&mut self) -> Option<Token<'a>> {
        let token = self.tokens.get(self.position).cloned();
        if token.is_some() {
            self.position += 1;
        }
        token
    }

    /// The error for `found` (the token just taken, or the end) where `expected` was wanted.
    fn unexpected(&self, found: Option<Token<'a>>, expected: &'static str) -> SelectorError {
        match found {
            Some(token) => SelectorError::Unexpected {
                found: token.text(),
                expected,
            },
            None => SelectorError::UnexpectedEnd {
                after: self.previous_text(),
                expected,
            },
        }
    }

    fn peek(&self) -> Option<&Token<'a>> {
        self.tokens.get(self.position)
    }

    fn previous_text(&self) -> String {
        let index = self.position.saturating_sub(1);
        self.tokens.get(index).map(Token::text).unwrap_or_default()
    }

    fn expect_word(&mut self, expected: &'static str) -> Result<&'a str, SelectorError> {
        match self.next() {
            Some(Token::Word(word)) => Ok(word),
            other => Err(self.unexpected(other, expected)),
        }
    }

    fn key(&mut self) -> Result<String, SelectorError> {
        let key = self.expect_word("a label key")?;
        if is_label_key(key) {
            Ok(key.to_owned())
        } else {
            Err(SelectorError::InvalidKey {
                key: key.to_owned(),
            })
        }
    }

    /// A value; may be empty (`key=` selects an empty value, as in apimachinery).
    fn value(&mut self) -> Result<String, SelectorError> {
        let value = match self.peek() {
            Some(Token::Word(word)) => {
                let word = *word;
                self.position += 1;
                word
            }
            _ => "",
        };
        if is_label_value(value) {
            Ok(value.to_owned())
        } else {
            Err(SelectorError::InvalidValue {
                value: value.to_owned(),
            })
        }
    }

    fn values(&mut self) -> Result<BTreeSet<String>, SelectorError> {
        let open = self.next();
        if open != Some(Token::Open) {
            return Err(self.unexpected(open, "'('"));
        }
        let mut values = BTreeSet::new();
        loop {
            values.insert(self.value()?);
            match self.next() {
                Some(Token::Comma) => {}
                Some(Token::Close) => return Ok(values),
                other => return Err(self.unexpected(other, "',' or ')'")),
            }
        }
    }

    fn requirement(&mut self) -> Result<Expression, SelectorError> {
        if self.peek() == Some(&Token::Not) {
            self.position += 1;
            return Ok(Expression::DoesNotExist(self.key()?));
        }
        let key = self.key()?;
        match self.peek().cloned() {
            None | Some(Token::Comma) => Ok(Expression::Exists(key)),
            Some(Token::Equals) => {
                self.position += 1;
                Ok(Expression::Equal(key, self.value()?))
            }
            Some(Token::NotEquals) => {
                self.position += 1;
                Ok(Expression::NotEqual(key, self.value()?))
            }
            Some(Token::Word("in")) => {
                self.position += 1;
                Ok(Expression::In(key, self.values()?))
            }
            Some(Token::Word("notin")) => {
                self.position += 1;
                Ok(Expression::NotIn(key, self.values()?))
            }
            Some(Token::Compare(operator)) => Err(SelectorError::Unsupported {
                operator: operator.to_owned(),
            }),
            other => {
                Err(self.unexpected(other, "an operator (=, ==, !=, in, notin), ',' or the end"))
            }
        }
    }
}
