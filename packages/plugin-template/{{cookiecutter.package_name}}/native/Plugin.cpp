// The library's entry point: `tritonGetPluginInfo` tells Triton which passes, dialects and custom ops it brings.
//
// Triton >= 3.7 calls it once when it loads the library (TRITON_PLUGIN_PATHS on 3.7/3.8,
// `passes.plugin.extend_with` on 3.9); in Python the passes appear as
// `triton._C.libtriton.passes.plugin.<name>(pm, args)`.
#include "Dialect.h"
#include "Passes.h"
#include "TritonPluginABI.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#ifndef {{ cookiecutter.__module_upper }}_TRITON_VERSION
#error "{{ cookiecutter.__module_upper }}_TRITON_VERSION must name the Triton version this library is built for"
#endif
#ifndef {{ cookiecutter.__module_upper }}_VERSION
#define {{ cookiecutter.__module_upper }}_VERSION "0"
#endif

namespace ns = {{ cookiecutter.plugin_name }}_native;

namespace {

void addToSquare(mlir::PassManager *pm, const std::vector<std::string> &) { pm->addPass(ns::createToSquarePass()); }
void addFromSquare(mlir::PassManager *pm, const std::vector<std::string> &) { pm->addPass(ns::createFromSquarePass()); }
// The first argument is the tag; without one the pass tags with the plugin's name.
void addTag(mlir::PassManager *pm, const std::vector<std::string> &args) {
  pm->addPass(ns::createTagPass(args.empty() ? std::string("{{ cookiecutter.plugin_name }}") : args.front()));
}

void registerToSquare() { mlir::registerPass([] { return ns::createToSquarePass(); }); }
void registerFromSquare() { mlir::registerPass([] { return ns::createFromSquarePass(); }); }
void registerTag() { mlir::registerPass([] { return ns::createTagPass("{{ cookiecutter.plugin_name }}"); }); }

void registerDialect(mlir::DialectRegistry *registry) { registry->insert<ns::PluginDialect>(); }

// The kernel-callable op `square` (src/{{ cookiecutter.module_name }}/language.py). tritonx.dsl calls it at the
// start of TTIR with `[x, stand_in]`, where `stand_in` is the placeholder the kernel's call left: build
// `{{ cookiecutter.plugin_name }}.square %x` right after it, take over its uses (Triton 3.7.1's binding drops the value
// written to operands[0]) and write the result into operands[0] (Triton's convention, returned by 3.8+).
// Built from the stand-in's own op: no dependence on Triton's builder class.
void addSquareOp(void * /*tritonOpBuilder*/, std::vector<mlir::Value> &operands) {
  if (operands.size() < 2)
    return; // not called the tritonx.dsl way: leave the operands alone
  mlir::Value input = operands.front();
  mlir::Value standIn = operands.back();
  mlir::Operation *anchor = standIn.getDefiningOp();
  if (!anchor)
    return;
  anchor->getContext()->getOrLoadDialect<ns::PluginDialect>();
  mlir::OpBuilder builder(anchor->getContext());
  builder.setInsertionPointAfter(anchor);
  auto square = ns::SquareOp::create(builder, anchor->getLoc(), standIn.getType(), input);
  standIn.replaceAllUsesWith(square.getResult());
  operands[0] = square.getResult();
}

} // namespace

extern "C" __attribute__((visibility("default"))) tritonx_abi::PluginInfo *tritonGetPluginInfo() {
  static tritonx_abi::PassEntry passes[] = {
      {"{{ cookiecutter.plugin_name }}_to_square", {{ cookiecutter.__module_upper }}_VERSION, addToSquare, registerToSquare},
      {"{{ cookiecutter.plugin_name }}_from_square", {{ cookiecutter.__module_upper }}_VERSION, addFromSquare, registerFromSquare},
      {"{{ cookiecutter.plugin_name }}_tag", {{ cookiecutter.__module_upper }}_VERSION, addTag, registerTag},
  };
  static tritonx_abi::DialectEntry dialects[] = {
      {"{{ cookiecutter.plugin_name }}", {{ cookiecutter.__module_upper }}_VERSION, registerDialect},
  };
  // Python: ir.builder.create_{{ cookiecutter.plugin_name }}_square (language.SQUARE_CUSTOM_OP).
  static tritonx_abi::OpEntry ops[] = {
      {"create_{{ cookiecutter.plugin_name }}_square", addSquareOp},
  };
  static tritonx_abi::PluginInfo info = {
      tritonx_abi::kPluginApiVersion,
      "{{ cookiecutter.plugin_name }}",
      {{ cookiecutter.__module_upper }}_VERSION,
      passes,
      sizeof(passes) / sizeof(passes[0]),
      dialects,
      sizeof(dialects) / sizeof(dialects[0]),
      ops,
      sizeof(ops) / sizeof(ops[0]),
      {{ cookiecutter.__module_upper }}_TRITON_VERSION,
  };
  return &info;
}
