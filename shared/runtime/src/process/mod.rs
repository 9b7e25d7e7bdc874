//! The process: the controller as a type, its flags, its cluster configuration, and the wiring that starts its watches, frame and servers.

pub mod app;
pub mod args;
pub mod controller;
pub mod kubeconfig;
