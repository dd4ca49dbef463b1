"""Bundle the plugin template into tritonx-core's sdist and wheel (``tritonx new`` needs it installed).

Why a build hook and not ``force-include``: the template lives next to this package in the monorepo
(``packages/plugin-template``), but an sdist is built once and then unpacked on its own, where that
folder does not exist. ``force-include`` of ``../plugin-template`` therefore broke every wheel built
from the sdist ("Forced include not found"). This hook copies the template into the sdist at
``src/tritonx/_template`` (the wheel then picks it up as package data, like any file under
``src/tritonx``) and, when the wheel is built straight from the checkout, force-includes it from
the monorepo folder. A build that finds the template in neither place stops and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

#: What of packages/plugin-template ships: cookiecutter's answers file, its hooks, the project tree.
TEMPLATE_PARTS = ("cookiecutter.json", "hooks", "{{cookiecutter.package_name}}")
#: Where the template sits inside an unpacked sdist (and so inside the ``tritonx`` package).
BUNDLED = Path("src", "tritonx", "_template")


class TemplateBuildHook(BuildHookInterface):
    """Force-include the template from the checkout, unless the sources already carry it (an sdist)."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        if (root / BUNDLED / "cookiecutter.json").is_file():
            return  # building from an sdist: the template is part of src/tritonx already
        checkout = root.parent / "plugin-template"
        if not (checkout / "cookiecutter.json").is_file():
            raise RuntimeError(
                f"tritonx-core: the plugin template is missing: neither {root / BUNDLED} (sdist) nor {checkout} "
                "(monorepo checkout) has cookiecutter.json; build from the monorepo or from its sdist"
            )
        prefix = BUNDLED.as_posix() if self.target_name == "sdist" else "tritonx/_template"
        for part in TEMPLATE_PARTS:
            build_data["force_include"][str(checkout / part)] = f"{prefix}/{part}"
