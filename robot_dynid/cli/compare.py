"""robot-dynid compare: several models (robots or tests) side by side, differences in standard deviations."""
import pathlib

__all__ = ["NAME", "HELP", "add_arguments", "main"]

NAME = "compare"
HELP = ("compare models of one structure (two robots, two tests): each base parameter's difference to the "
        "first model in units of the combined standard deviation, and whether it is significant")


def add_arguments(parser):
    from robot_dynid.cli.options import open_unit_interval, output_directory
    from robot_dynid.estimation.comparison import DEFAULT_SIGNIFICANCE
    parser.add_argument("models", nargs="+", metavar="MODEL.yaml", help="model files from identify; the first is "
                        "the reference (two or more)")
    parser.add_argument("--level", type=open_unit_interval, default=DEFAULT_SIGNIFICANCE,
                        help="two-sided significance level per parameter (default: %(default)s)")
    parser.add_argument("--out", type=output_directory, default=None, metavar="DIR",
                        help="also write index.html, summary.json and figures (parameter differences, friction "
                             'curves overlaid) there (needs matplotlib: pip install "robot-dynid[report]")')
    parser.add_argument("--json", action="store_true",
                        help="print JSON: per parameter values, std, differences, z and significant: true/false")


def main(args):
    from robot_dynid.model.dynamic_model import DynamicModel
    from robot_dynid.reports.html import number
    from robot_dynid.reports.json_text import dumps
    from robot_dynid.reports.report import make_comparison
    from robot_dynid.reports.tables import format_table
    if args.out is not None:
        from robot_dynid.reports.figures import pyplot
        pyplot()
    models = [DynamicModel.load(path) for path in args.models]
    labels = _labels(args.models)
    summary = make_comparison(models, labels, args.level, args.out)
    if args.json:
        print(dumps(summary))
        return 0
    rows = []
    for entry in summary["parameters"]:
        cells = [entry["name"], *(number(v, 5) for v in entry["values"])]
        for difference in entry["differences"]:
            z = difference["z"]
            cells.append(f"{number(z, 3) if not isinstance(z, str) else z}{' *' if difference['significant'] else ''}")
        rows.append(cells)
    print(format_table(("parameter", *labels, *(f"z {label}" for label in labels[1:])), rows))
    for label, method in zip(labels, summary["std_methods"]):
        print(f"std of {label}: {method}")
    if summary["payload_note"]:
        print(summary["payload_note"])
    significant = [entry["name"] for entry in summary["parameters"] if entry["significant"]]
    print(f"z = (value - {labels[0]}) / combined std (where a std has degrees of freedom, the normal deviate of "
          f"Student's t p-value); * significant at level {args.level:g} (|z| > "
          f"{summary['critical_z']:.3g}; about {summary['expected_false_positives']:.1f} of {len(rows)} parameters "
          f"exceed it by chance): {len(significant)} significant" + (f": {', '.join(significant)}" if significant
                                                                     else ""))
    if args.out is not None:
        print(f"comparison written to {pathlib.Path(args.out) / 'index.html'}")
    return 0


def _labels(paths):
    """Distinct short labels of model files: their names, with parent folders where names repeat."""
    paths = [pathlib.Path(path) for path in paths]
    labels = [path.stem for path in paths]
    if len(set(labels)) < len(labels):
        labels = [f"{path.parent.name}/{path.stem}" for path in paths]
    if len(set(labels)) < len(labels):
        labels = [f"{index + 1}:{label}" for index, label in enumerate(labels)]
    return labels
