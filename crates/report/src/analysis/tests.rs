//! HTA's kernel classes (the analyses on hand-made traces are in
//! tests/analysis_small.rs: traces are written there, not in src/).

use super::breakdown::HtaClass;

#[test]
fn hta_kernel_classes() {
    assert_eq!(
        HtaClass::of("ncclKernel_AllReduce"),
        HtaClass::Communication
    );
    assert_eq!(
        HtaClass::of("ncclDevKernel_Generic"),
        HtaClass::Communication
    );
    assert_eq!(
        HtaClass::of("Memcpy HtoD (Pageable -> Device)"),
        HtaClass::Memory
    );
    assert_eq!(HtaClass::of("Memset (Device)"), HtaClass::Memory);
    assert_eq!(
        HtaClass::of("void at::native::vectorized_elementwise_kernel"),
        HtaClass::Computation
    );
    assert_eq!(HtaClass::of("Event Sync"), HtaClass::Other);
    assert_eq!(HtaClass::of("cudaLaunchKernel"), HtaClass::Other);
}
