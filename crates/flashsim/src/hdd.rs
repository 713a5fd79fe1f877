//! Hard-disk model (placeholder until implemented).
pub struct Hdd;
pub struct HddConfig;
