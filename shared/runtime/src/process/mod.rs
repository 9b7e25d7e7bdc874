//! The process: the controller as a type, its flags, its cluster configuration, the wiring that starts its watches, frame and servers, and `cleanup`, what an uninstall runs first.

pub mod app;
pub mod args;
pub mod cleanup;
pub mod controller;
pub mod kubeconfig;
