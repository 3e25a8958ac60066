#[repr(C)]
pub struct HammingBall {
    pub center: u64,
    pub radius: i32,
    pub _pad: u32,
}
