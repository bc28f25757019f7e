"""A package given to `wasmpy pkg build` as a directory."""
import importlib.resources


def greeting(name):
    template = importlib.resources.files(__name__).joinpath("template.txt").read_text()
    return template.strip().format(name=name)
