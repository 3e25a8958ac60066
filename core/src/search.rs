//! Finding near signatures: permuted tables, the index's page encodings and merge policy, ball
//! sets, nearest-first passes, MinHash LSH. Imports `base`, `text` and `signatures`.

pub mod ball_set;
pub mod code_tables;
pub mod index_page;
pub mod lsh;
pub mod lsh_encoding;
pub mod merge_policy;
pub mod merge_queue;
pub mod multi_index;
pub mod nearest;
pub mod pair_parts;
pub mod permuted;
pub mod prefix_bitmap;
pub mod rings;
pub mod table_parts;
pub mod within;
