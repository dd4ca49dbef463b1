// The plugin's passes, created by name from Plugin.cpp.
#pragma once

#include <memory>
#include <string>

#include "mlir/Pass/Pass.h"

namespace {{ cookiecutter.plugin_name }}_native {

/// `arith.mulf %x, %x` -> `{{ cookiecutter.plugin_name }}.square %x` (conversion into the dialect).
std::unique_ptr<mlir::Pass> createToSquarePass();
/// `{{ cookiecutter.plugin_name }}.square %x` -> `arith.mulf %x, %x` (lowering back to stock ops).
std::unique_ptr<mlir::Pass> createFromSquarePass();
/// Sets the string attribute `{{ cookiecutter.plugin_name }}.tag = "<tag>"` on every `tt.func`.
std::unique_ptr<mlir::Pass> createTagPass(std::string tag);

} // namespace {{ cookiecutter.plugin_name }}_native
