//! The ids that cross from the server to the pages: a run's and a trial's. Each has a type
//! of its own, so that one cannot be passed where the other is meant; on the wire each is a
//! plain JSON string, in the database a text column, and in a page it reads as the `str` it
//! holds (`as_str`).

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Clone,
            Debug,
            Default,
            PartialEq,
            Eq,
            PartialOrd,
            Ord,
            Hash,
            Serialize,
            Deserialize,
            derive_more::AsRef,
            derive_more::Deref,
            derive_more::Display,
            derive_more::From,
            derive_more::Into,
        )]
        #[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(transparent))]
        #[serde(transparent)]
        #[as_ref(forward)]
        #[deref(forward)]
        #[from(String, &str, &String)]
        pub struct $name(String);

        impl $name {
            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }
    };
}

id_type!(
    /// A run's id (`run-…` for runs Mirage made, any string for one imported).
    RunId
);
id_type!(
    /// A trial's id, unique across runs.
    TrialId
);

#[cfg(test)]
mod tests {
    use super::{RunId, TrialId};

    #[test]
    fn an_id_is_a_plain_string_on_the_wire() {
        let run = RunId::from("run-1");
        assert_eq!(serde_json::to_string(&run).expect("serialises"), "\"run-1\"");
        let back: TrialId = serde_json::from_str("\"t-9\"").expect("parses");
        assert_eq!(back, "t-9");
        assert_eq!(format!("/runs/{run}/trials/{back}"), "/runs/run-1/trials/t-9");
    }
}
