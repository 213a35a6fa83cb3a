//! Typed names: enums whose variants travel as text (in the store, in trajectory lines, in
//! query parameters and on the command line). A misspelt name does not compile in code
//! and is refused, naming what it should have been, when it is read.

/// A name that is none of an enum's variants.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {name:?} is not one of {known}")]
pub struct UnknownName {
    /// What kind of name it was meant to be (`level`, `trial state`, …).
    pub what: &'static str,
    pub name: String,
    /// The accepted names, comma-separated.
    pub known: String,
}

/// Declares an enum of named variants: derives serde and strum (callers add their casing
/// attributes, e.g. `#[serde(rename_all = "snake_case")] #[strum(serialize_all =
/// "snake_case")]`), and gives it `ALL`, `as_str`, `parse` (an [`UnknownName`] error) and
/// `TryFrom<String>` (how the store reads it back). Names written to the database are an
/// API: rename a variant only with a migration.
#[macro_export]
macro_rules! named_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident ($what:literal) { $($(#[$vmeta:meta])* $variant:ident,)* }) => {
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord,
            serde::Serialize, serde::Deserialize,
            strum::EnumString, strum::IntoStaticStr, strum::Display, strum::VariantArray,
        )]
        $(#[$meta])*
        $vis enum $name { $($(#[$vmeta])* $variant,)* }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = <$name as strum::VariantArray>::VARIANTS;

            /// The variant's name.
            pub fn as_str(self) -> &'static str {
                self.into()
            }

            /// Reads a name; an unknown one is an error that lists the names.
            pub fn parse(name: &str) -> Result<$name, $crate::UnknownName> {
                name.parse().map_err(|_| $crate::UnknownName {
                    what: $what,
                    name: name.to_string(),
                    known: $name::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", "),
                })
            }
        }

        impl $crate::recorded::Name for $name {
            fn name(self) -> &'static str {
                self.as_str()
            }
            fn of(name: &str) -> Option<Self> {
                name.parse().ok()
            }
        }

        impl TryFrom<String> for $name {
            type Error = $crate::UnknownName;
            fn try_from(s: String) -> Result<Self, $crate::UnknownName> {
                $name::parse(&s)
            }
        }
    };
}
