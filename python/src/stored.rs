//! What every stored signature type shares with its SQL type: the binary form (what the
//! server's send function writes and its receive function reads, so psycopg's binary
//! format carries it as is), the text form (the type's output and input functions),
//! equality of values, and pickling through the binary form (Spark, Dask and
//! multiprocessing ship sketches between processes).

/// Writes the Python class `$name` over the core's `$core` with the shared methods.
/// `$core` must have `to_bytes`, `from_bytes`, `from_text` and `Display`, as every stored
/// type of the core does.
macro_rules! stored_class {
    ($class:ident, $core:ty, $name:literal, $sql:literal) => {
        #[doc = concat!("A `", $sql, "` value.")]
        #[pyclass(module = "neardup", name = $name, frozen)]
        pub struct $class(pub $core);

        #[pymethods]
        impl $class {
            #[doc = concat!("Reads the binary form of `", $sql, "` (what the server sends).")]
            #[staticmethod]
            fn from_bytes(data: &[u8]) -> PyResult<Self> {
                <$core>::from_bytes(data)
                    .map($class)
                    .map_err(|e| PyValueError::new_err(e.to_string()))
            }

            #[doc = concat!("Reads the text form of `", $sql, "`, as its input function does.")]
            #[staticmethod]
            fn from_text(text: &str) -> PyResult<Self> {
                <$core>::from_text(text.as_bytes())
                    .map($class)
                    .map_err(|e| PyValueError::new_err(e.to_string()))
            }

            #[doc = concat!("The binary form of `", $sql, "`, byte for byte the server's.")]
            fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
                PyBytes::new(py, &self.0.to_bytes())
            }

            fn __bytes__<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
                self.to_bytes(py)
            }

            /// The text form, as the server prints it.
            fn __str__(&self) -> String {
                self.0.to_string()
            }

            fn __repr__(&self) -> String {
                format!("{}.from_text('{}')", $name, self.0)
            }

            fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
                other
                    .cast::<$class>()
                    .is_ok_and(|other| self.0 == other.get().0)
            }

            fn __hash__(&self) -> u64 {
                neardup_core::base::hash::hash_bytes(&self.0.to_bytes())
            }

            fn __reduce__<'py>(
                slf: &Bound<'py, Self>,
            ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
                let from_bytes = slf.get_type().getattr("from_bytes")?;
                Ok((from_bytes, (slf.get().to_bytes(slf.py()),)))
            }
        }
    };
}

pub(crate) use stored_class;
