"""What the upstream components are, as this program names them: API groups and versions, labels,
annotations, KAI's and gpu-fractioning's objects, the node-runtime table, mpsd's sizing and the
driver floor, each written once.

The ground of the program: it imports nothing else of it. The config model reads its defaults and
choices from here; the installs, the lab and the checks read the same facts from here.
"""
