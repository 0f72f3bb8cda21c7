//! Integration tests: a real server on 127.0.0.1:0, driven over HTTP.

mod archive;
mod conformance;
mod fuzz;
mod guard;
mod health;
mod hostile;
mod idempotency;
mod jwt;
mod lifecycle;
mod listen;
mod macros;
mod mail_enforcement;
mod mailbox_events;
mod messaging;
mod metrics;
mod products;
mod push;
mod redis_limits;
mod reservations;
mod resources;
mod rest;
mod security;
mod tool_schemas;
mod transport;
mod upkeep;
mod web;
