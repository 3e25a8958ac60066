//! The blocks a run or a chain of pages occupies, found by walking it: what a dead run's
//! recycling frees and what the checker compares with the free space map. Below `run` and
//! `registry`, which both use it.

use super::page::{self, Kind};
use neardup_core::search::index_page::{children, Run, NO_BLOCK};
use pgrx::pg_sys;

/// Every block of a run: its directories, leaves and NULL rows.
pub fn run_blocks(index: pg_sys::Relation, run: &Run) -> Vec<u32> {
    let mut blocks = Vec::new();
    for tree in &run.trees {
        let mut stack: Vec<u32> = (tree.root != NO_BLOCK)
            .then_some(tree.root)
            .into_iter()
            .collect();
        while let Some(block) = stack.pop() {
            pgrx::check_for_interrupts!();
            blocks.push(block);
            let locked = page::read_owned(index, block, Kind::Directory, run.id);
            // SAFETY: a locked directory page.
            unsafe {
                let kids = children(page::contents(locked.page())).map(|(_, c)| c);
                if page::level(locked.page()) == 1 {
                    blocks.extend(kids);
                } else {
                    stack.extend(kids);
                }
            }
        }
    }
    blocks.extend(chain_blocks(index, Kind::Pending, run.id, run.nulls_head));
    blocks
}

/// The blocks of a chain of leaves or pending pages, from `head` on.
pub fn chain_blocks(index: pg_sys::Relation, kind: Kind, owner: u32, head: u32) -> Vec<u32> {
    let mut blocks = Vec::new();
    let mut block = head;
    while block != NO_BLOCK {
        pgrx::check_for_interrupts!();
        blocks.push(block);
        let locked = page::read_owned(index, block, kind, owner);
        // SAFETY: a locked pending page.
        block = unsafe { page::next(locked.page()) };
    }
    blocks
}
