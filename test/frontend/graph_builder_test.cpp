//===- graph_builder_test.cpp - the C++ graph-building API ----------------===//

#include "frontend/GraphBuilder.h"
#include "test/compiler/TestUtils.h"

#include "mlir/IR/Diagnostics.h"

#include <cmath>

using namespace weft;
using reference::Tensor;

TEST(GraphBuilder, BuildsAVerifiedGraphThatEvaluates) {
  auto context = testutil::makeContext();
  GraphBuilder g(*context, "mlp");
  mlir::Type f32 = g.builder().getF32Type();
  mlir::Value x = g.input("x", {2, 3}, f32);
  mlir::Value w = g.param("w", {3, 2}, f32, Init::ones());
  mlir::Value b = g.param("b", {2}, f32, Init::zeros());
  g.setScope("mlp.fc");
  mlir::Value y = g.silu(g.addBias(g.matmul(x, w), b));
  mlir::Value loss = g.reduceMean(g.square(y), {0, 1});
  mlir::OwningOpRef<mlir::ModuleOp> module = g.finish({loss, y});
  ASSERT_TRUE(module);

  mlir::func::FuncOp func = testutil::firstFunc(*module);
  EXPECT_EQ(func.getSymName(), "mlp");
  EXPECT_EQ(func.getArgAttrOfType<mlir::StringAttr>(0, "weft.input").getValue(),
            "x");
  EXPECT_EQ(func.getNumResults(), 2u);
  EXPECT_EQ(reference::countParameters(func), 8);
  bool sawScope = false;
  func.walk([&](MatmulOp op) {
    sawScope = mlir::isa<mlir::NameLoc>(op.getLoc()) &&
               mlir::cast<mlir::NameLoc>(op.getLoc()).getName() == "mlp.fc";
  });
  EXPECT_TRUE(sawScope);

  // Row sums of x through silu: [6, 15] -> silu(6), silu(15) in both columns.
  auto r = testutil::run(*module, {Tensor({2, 3}, {1, 2, 3, 4, 5, 6})});
  auto silu = [](double v) { return v / (1 + std::exp(-v)); };
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NEAR(r[1].data[0], silu(6), 1e-12);
  EXPECT_NEAR(r[1].data[3], silu(15), 1e-12);
  EXPECT_NEAR(r[0].data[0], (silu(6) * silu(6) + silu(15) * silu(15)) / 2,
              1e-9);
}

TEST(GraphBuilder, ShapeErrorsAreDiagnosticsNotCrashes) {
  auto context = testutil::makeContext();
  std::string message;
  testutil::DiagnosticCapture capture(*context, message);
  GraphBuilder g(*context);
  mlir::Type f32 = g.builder().getF32Type();
  mlir::Value x = g.input("x", {2, 3}, f32);
  mlir::Value w = g.param("w", {4, 2}, f32, Init::normal(0.02));
  mlir::Value y = g.matmul(x, w);
  EXPECT_FALSE(y);
  EXPECT_EQ(message, "matmul contraction sizes differ: lhs has 3, rhs has 4");
  EXPECT_TRUE(g.hasFailed());
  // Later calls on the null value stay null; finish reports the failure.
  EXPECT_FALSE(g.gelu(y));
  EXPECT_FALSE(g.reduceSum(y, {0}));
  EXPECT_FALSE(g.finish({x}));
}

TEST(GraphBuilder, VerifierErrorsFailFinish) {
  auto context = testutil::makeContext();
  std::string message;
  testutil::DiagnosticCapture capture(*context, message);
  GraphBuilder g(*context);
  mlir::Value x = g.input("x", {2, 3}, g.builder().getF32Type());
  mlir::Value y = g.reshape(x, {5});
  EXPECT_FALSE(g.finish({y}));
  EXPECT_EQ(message, "'weft.reshape' op cannot reshape [2, 3] (6 elements) "
                     "into [5] (5 elements)");
}

TEST(GraphBuilder, CoversTheMixtureOfExpertsOps) {
  auto context = testutil::makeContext();
  GraphBuilder g(*context);
  mlir::Type f32 = g.builder().getF32Type();
  mlir::Value x = g.input("x", {4, 8}, f32);
  mlir::Value router = g.param("router", {3, 8}, f32, Init::normal(0.5));
  auto [weights, experts] =
      g.topkGating(g.matmul(x, router, false, true), 2, true);
  auto [positions, counts] = g.expertRoute(experts, 3, /*capacity=*/2);
  mlir::Value rows = g.expertDispatch(x, positions, 6);
  mlir::Value w = g.param("w", {3, 8, 8}, f32, Init::normal(0.5));
  mlir::Value out = g.expertCombine(g.groupedMatmul(rows, w, counts, false),
                                    weights, positions);
  auto module = g.finish({out});
  ASSERT_TRUE(module);
  std::mt19937 rng(1);
  auto r = testutil::run(*module, {testutil::randomTensor({4, 8}, rng)});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].shape, (std::vector<int64_t>{4, 8}));
}
