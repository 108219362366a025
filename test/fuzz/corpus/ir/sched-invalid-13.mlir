//===----------------------------------------------------------------------===//
// sched.constant
//===----------------------------------------------------------------------===//

// A dense_resource blob's type need not be static.
sched.constant @c dense_resource<blob> : tensor<?xf32>
