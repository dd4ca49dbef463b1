// The plugin's three passes.
//
// They match Triton and arith ops by name (`op->getName()`), not through Triton's C++ classes: the
// Triton wheel ships no C++ headers, and names are stable across the LLVM versions Triton pins.
#include "Passes.h"

#include "Dialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/SmallVector.h"

namespace {{ cookiecutter.plugin_name }}_native {
namespace {

constexpr const char *kMulF = "arith.mulf";

struct ToSquarePass : mlir::PassWrapper<ToSquarePass, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ToSquarePass)

  llvm::StringRef getArgument() const final { return "{{ cookiecutter.plugin_name }}_to_square"; }
  llvm::StringRef getDescription() const final { return "Rewrite arith.mulf %x, %x into {{ cookiecutter.plugin_name }}.square"; }
  // Creating our ops needs the dialect loaded in the context; declaring it lets the pass manager do that.
  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<PluginDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::Operation *> matches;
    getOperation()->walk([&](mlir::Operation *op) {
      if (op->getName().getStringRef() == kMulF && op->getNumOperands() == 2 &&
          op->getOperand(0) == op->getOperand(1))
        matches.push_back(op);
    });
    for (mlir::Operation *op : matches) {
      mlir::OpBuilder builder(op);
      auto square = SquareOp::create(builder, op->getLoc(), op->getResult(0).getType(), op->getOperand(0));
      op->getResult(0).replaceAllUsesWith(square.getResult());
      op->erase();
    }
  }
};

struct FromSquarePass : mlir::PassWrapper<FromSquarePass, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FromSquarePass)

  llvm::StringRef getArgument() const final { return "{{ cookiecutter.plugin_name }}_from_square"; }
  llvm::StringRef getDescription() const final { return "Lower {{ cookiecutter.plugin_name }}.square back to arith.mulf"; }

  void runOnOperation() override {
    llvm::SmallVector<SquareOp> matches;
    getOperation()->walk([&](SquareOp op) { matches.push_back(op); });
    for (SquareOp op : matches) {
      mlir::OpBuilder builder(op);
      // Built generically by name: no dependence on arith's C++ classes.
      mlir::OperationState state(op.getLoc(), kMulF);
      state.addOperands({op.getInput(), op.getInput()});
      state.addTypes(op.getType());
      mlir::Operation *mul = builder.create(state);
      op.getResult().replaceAllUsesWith(mul->getResult(0));
      op.erase();
    }
  }
};

struct TagPass : mlir::PassWrapper<TagPass, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TagPass)

  explicit TagPass(std::string tag) : tag(std::move(tag)) {}
  llvm::StringRef getArgument() const final { return "{{ cookiecutter.plugin_name }}_tag"; }
  llvm::StringRef getDescription() const final { return "Tag every tt.func with {{ cookiecutter.plugin_name }}.tag"; }

  void runOnOperation() override {
    mlir::MLIRContext *ctx = &getContext();
    getOperation()->walk([&](mlir::Operation *op) {
      if (op->getName().getStringRef() == "tt.func")
        op->setAttr("{{ cookiecutter.plugin_name }}.tag", mlir::StringAttr::get(ctx, tag));
    });
  }

  std::string tag;
};

} // namespace

std::unique_ptr<mlir::Pass> createToSquarePass() { return std::make_unique<ToSquarePass>(); }
std::unique_ptr<mlir::Pass> createFromSquarePass() { return std::make_unique<FromSquarePass>(); }
std::unique_ptr<mlir::Pass> createTagPass(std::string tag) { return std::make_unique<TagPass>(std::move(tag)); }

} // namespace {{ cookiecutter.plugin_name }}_native
