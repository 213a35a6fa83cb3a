//! The one integration-test binary: real server on a loopback port, real SQLite files,
//! real HTTP, and the real `mirage` binary for the command line.

mod adoption;
mod audit;
mod bundle;
mod cli;
mod cold;
mod compare;
mod cost;
mod crash;
mod dashboard;
mod docs;
mod episodes;
mod examples;
mod fairness;
mod frozen;
mod geo;
mod geo_originals;
mod harness;
mod interrupted;
mod layout;
mod live;
mod llm;
mod network;
mod paired;
mod protocol;
mod runs;
mod score;
mod search;
mod sharing;
mod signal;
mod sites;
mod store;
mod support;
mod tokens;
