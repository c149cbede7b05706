# Sourced by the benchmarks that time a build: `fresh_copy FROM TO` copies
# the build's binaries from FROM into TO. How a binary's pages sit in the
# page cache moves its start-up: the same `drover` started ~0.2 ms sooner
# from a file just written by `cp` than from the linker's output or a file
# read back from disk (docs/benchmarks.md, twenty-second session). Every
# build a benchmark times is a fresh copy, so A/B runs compare like with
# like.
fresh_copy() {
  mkdir -p "$2"
  for f in drover droverctld droverd droverdbd droverrestd; do
    if [ -e "$1/$f" ]; then cp "$1/$f" "$2/"; fi
  done
}
