#!/usr/bin/env bash
# Sourced by test.sh after setup.sh: points cargo at a target directory kept from run to run
# (/var/cache/neardup/target, or $NEARDUP_BUILD_CACHE), as the earlier releases and Citus
# are kept. A fresh clone builds its third-party crates (pgrx and its bindings for every
# major and profile, syn, pyo3 ...) from that directory, which took about 15 of the suite's
# 80 minutes when each run built them anew; neardup's own crates are always built from the
# clone: their artifacts are removed first. A CARGO_TARGET_DIR already set is used as it is.
# Needs SYSTEM_PG_CONFIG (setup.sh), PG16 and PG18 (the servers' pg_config) set.
if [[ -z ${CARGO_TARGET_DIR:-} ]]; then
    export CARGO_TARGET_DIR=${NEARDUP_BUILD_CACHE:-/var/cache/neardup/target}
    mkdir -p "$CARGO_TARGET_DIR"
    # one run at a time uses it (and the clusters test.sh names in /tmp anyway)
    exec {build_cache_lock}>"$CARGO_TARGET_DIR.lock"
    flock -n "$build_cache_lock" || {
        echo "build_cache.sh: waiting for another run using $CARGO_TARGET_DIR"
        flock "$build_cache_lock"
    }
    # What the kept builds were made from. Cargo would rebuild what changed, but keep what
    # no longer serves: a new toolchain, lock file or server starts the directory over, so
    # that it stays one set of builds (about 6 GB, and 2 more of the last run's own crates).
    build_cache_stamp=$({
        rustc -vV
        cat Cargo.lock python/Cargo.lock
        for pg_config in "$SYSTEM_PG_CONFIG" "$PG16" "$PG18"; do "$pg_config" --version; done
    } | sha256sum | cut -d' ' -f1)
    if [[ $(cat "$CARGO_TARGET_DIR/neardup-build-stamp" 2>/dev/null) != "$build_cache_stamp" ]]; then
        echo "build_cache.sh: $CARGO_TARGET_DIR starts over (first run, or a new toolchain, lock file or server)"
        find "$CARGO_TARGET_DIR" -mindepth 1 -delete
        echo "$build_cache_stamp" >"$CARGO_TARGET_DIR/neardup-build-stamp"
    fi
    # Each unit cargo builds has a fingerprint directory named after its package and the
    # hash its files carry: remove every unit of this workspace's packages (libraries,
    # tests, binaries, build scripts) in every profile, then what they left at the top.
    for fingerprint in "$CARGO_TARGET_DIR"/{,*/}*/.fingerprint/{neardup,neardup-core,neardup-quality,neardup-python}-*; do
        [[ -e $fingerprint ]] || continue
        profile=${fingerprint%/.fingerprint/*}
        hash=${fingerprint##*-}
        rm -rf "$fingerprint" "$profile"/deps/*-"$hash" "$profile"/deps/*-"$hash".* "$profile"/build/*-"$hash"
    done
    rm -rf "$CARGO_TARGET_DIR"/{,*/}*/incremental "$CARGO_TARGET_DIR"/{,*/}*/{libneardup,lib_neardup,neardup}* \
        "$CARGO_TARGET_DIR"/wheels
fi
# a build from a fresh clone gains nothing from incremental compilation's records
export CARGO_INCREMENTAL=0
