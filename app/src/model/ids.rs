//! The ids that cross from the server to the pages: a run's and a trial's. Each has a type
//! of its own, so that one cannot be passed where the other is meant; on the wire each is a
//! plain JSON string, and in a page it reads as the `str` it holds.

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                $name(id)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                $name(id.to_string())
            }
        }

        impl From<&String> for $name {
            fn from(id: &String) -> Self {
                $name(id.clone())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
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

        // In a page, an id renders and sits in an attribute as the text it holds.
        impl leptos::prelude::IntoRender for $name {
            type Output = String;
            fn into_render(self) -> String {
                self.0
            }
        }

        impl leptos::prelude::IntoAttributeValue for $name {
            type Output = String;
            fn into_attribute_value(self) -> String {
                self.0
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
