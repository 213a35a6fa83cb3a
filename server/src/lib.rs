//! Mirage server library: the engine modules and the HTTP application.

pub mod corpus;
