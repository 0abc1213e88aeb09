//! Test helper for the crash-safety test: writes accepted episodes into the memory at
//! `DB` one transaction at a time and prints `committed N` after each commit, until it is
//! killed or has written `COUNT`.
//!
//! Usage: memory_crash_writer DB CAPACITY COUNT

use std::io::Write;

use asp_config::sections::affordance::MemoryConfig;
use asp_memory::AffordanceMemory;
use asp_memory::testkit::{acceptance_for, clean_evidence, draft};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, db, capacity, count] = args.as_slice() else {
        return Err("usage: memory_crash_writer DB CAPACITY COUNT".into());
    };
    let cfg = MemoryConfig {
        episodic_capacity: capacity.parse()?,
        ..MemoryConfig::default()
    };
    let memory = AffordanceMemory::open(db, &cfg, &[])?;
    let count: u64 = count.parse()?;
    let start = memory.stats()?.episodes_written;
    let evidence = clean_evidence();
    let mut out = std::io::stdout().lock();
    for i in start..start + count {
        let acceptance =
            acceptance_for(&evidence).ok_or("clean evidence must pass the commit rule")?;
        let category = if i % 2 == 0 { "mug" } else { "drawer" };
        memory.write_back(acceptance, draft(i, category))?;
        writeln!(out, "committed {i}")?;
        out.flush()?;
    }
    Ok(())
}
