# Sourced by hashes.sh and phase.sh: BASE's tree and this checkout's selp in $W/base and
# $W/branch, each with its kernel built from its own _kernel.c, and the 1,000-node graph in $W/g.
# Needs ROOT, BASE and W set.
INC=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
SUF=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
mkdir -p "$W/base" "$W/branch"
git -C "$ROOT" archive "$BASE" | tar -x -C "$W/base"
git -C "$ROOT" ls-files -z selp | (cd "$ROOT" && xargs -0 tar -c) | tar -x -C "$W/branch"
for t in base branch; do
  gcc -O3 -fno-strict-aliasing -fwrapv -DNDEBUG -fPIC -shared -pthread -I"$INC" "$W/$t/selp/topk/_kernel.c" -o "$W/$t/selp/topk/_kernel$SUF"
done
PYTHONPATH="$W/branch" python3 -c "from selp.bench.anchors import generate_graph; from pathlib import Path; generate_graph(1000, Path('$W/g'), 1)"
