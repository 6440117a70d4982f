//! Messages and paths built by appending their pieces. A check of small schemas spent a sixth
//! of its time in `format!`'s machinery (argument dispatch, `Display` through a `Formatter`)
//! for what is a handful of string copies.

use crate::model::{Describe, Name};

/// Something that appends itself to a message.
pub trait Piece {
    fn push_to(&self, out: &mut String);
}

impl Piece for &str {
    fn push_to(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl Piece for String {
    fn push_to(&self, out: &mut String) {
        out.push_str(self);
    }
}

// Writing into a `String` cannot fail.
impl Piece for Name {
    fn push_to(&self, out: &mut String) {
        let _ = self.write_to(out);
    }
}

impl Piece for Describe<'_> {
    fn push_to(&self, out: &mut String) {
        let _ = self.write_to(out);
    }
}

/// The pieces one after the other, in one allocation.
pub fn text(pieces: &[&dyn Piece]) -> String {
    let mut out = String::with_capacity(96);
    for piece in pieces {
        piece.push_to(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_written_with_their_namespace_when_they_have_one() {
        let qualified = Name {
            name: "User".into(),
            namespace: Some("com.acme".into()),
        };
        let bare = Name {
            name: "User".into(),
            namespace: Some(String::new()),
        };
        assert_eq!(
            text(&[&"'", &qualified, &"' '", &bare, &"'"]),
            "'com.acme.User' 'User'"
        );
        assert_eq!(qualified.full(), "com.acme.User");
    }
}
