
use pgrx::prelude::*;

#[pg_test]
fn simhash_literal_works() {
    let hex = Spi::get_one::<String>("SELECT simhash('some text')::text").unwrap().unwrap();
    assert_eq!(hex.len(), 16);
}
