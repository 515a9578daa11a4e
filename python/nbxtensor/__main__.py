"""``python -m nbxtensor``: the library's main job today: print the dtype table it was built with."""

from nbxtensor import __version__
from nbxtensor.dtype import itemsize as I


def main() -> None:
    """Prints the version and one line per dtype of the table."""
    print(f"nbxtensor {__version__}: the dtype table compiled into this build")
    print(f"{'value':>5}  {'name':<17}{'kind':<9}{'width':>5}  {'safetensors':<12}{'dlpack':<13}{'key':<9}")
    for name in I.names():
        e = I.entry(name)
        width = "-" if e["width"] is None else str(e["width"])
        dl = "-" if e["dlpack"] is None else "{}/{}/{}".format(*e["dlpack"])
        print(f"{e['value']:>5}  {name:<17}{e['kind']:<9}{width:>5}  {e['safetensors'] or '-':<12}{dl:<13}{e['launch_key']:<9}")


if __name__ == "__main__":
    main()
