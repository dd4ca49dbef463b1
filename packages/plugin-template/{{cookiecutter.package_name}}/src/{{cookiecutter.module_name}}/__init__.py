"""{{ cookiecutter.description }}

tritonx finds this plugin through the ``tritonx.plugins`` entry point (see pyproject.toml), which
points at :func:`{{ cookiecutter.module_name }}.plugin.make_plugin`. Importing this package stays cheap:
Triton and tritonx are imported only when the plugin is built.
"""

__version__ = "{{ cookiecutter.version }}"
PLUGIN_NAME = "{{ cookiecutter.plugin_name }}"

__all__ = ["PLUGIN_NAME", "__version__"]
