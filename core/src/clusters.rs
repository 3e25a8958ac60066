//! Duplicate clusters over found pairs: connected components, representatives that do not
//! chain, cluster plans and result refinement. May import every lower layer.

pub mod cluster_plans;
pub mod components;
pub mod refinement;
pub mod representatives;
