//! demo.rs - Rust test program for stacksym's ELF symbolizer (demangling).
//!
//! Built by ../build.sh as bin/rust-legacy (default = legacy `_ZN..17h<hash>E`
//! mangling for this crate) and bin/rust-v0 (`_R...` v0 mangling).  The crate
//! name is `demo`.  Functions kept as their own symbols (#[inline(never)]):
//!
//!   demo::largest::<i32>, demo::largest::<f64>       generic, instantiated twice
//!   <demo::Circle as demo::Shape>::area              trait impls, called through dyn
//!   <demo::Square as demo::Shape>::area
//!   demo::main::{closure#0}                          closure, called through &dyn Fn
//!   demo::apply_dyn
//!   demo::inner::deeper::nested_fn                   nested modules
use std::hint::black_box;

trait Shape {
    fn area(&self) -> f64;
}

struct Circle {
    r: f64,
}

struct Square {
    s: f64,
}

impl Shape for Circle {
    #[inline(never)]
    fn area(&self) -> f64 {
        std::f64::consts::PI * self.r * self.r
    }
}

impl Shape for Square {
    #[inline(never)]
    fn area(&self) -> f64 {
        self.s * self.s
    }
}

#[inline(never)]
fn largest<T: PartialOrd + Copy>(xs: &[T]) -> T {
    let mut best = xs[0];
    for &x in xs {
        if x > best {
            best = x;
        }
    }
    best
}

#[inline(never)]
fn apply_dyn(f: &dyn Fn(u64) -> u64, x: u64) -> u64 {
    f(f(x))
}

#[inline(never)]
fn total_area(shapes: &[Box<dyn Shape>]) -> f64 {
    shapes.iter().map(|s| s.area()).sum()
}

mod inner {
    pub mod deeper {
        #[inline(never)]
        pub fn nested_fn(x: u32) -> u32 {
            x.rotate_left(5) ^ 0x9e37_79b9
        }
    }
}

fn main() {
    let ints = black_box([3i32, 9, 2, 7]);
    let floats = black_box([1.5f64, 0.5, 2.5]);
    let a = largest(&ints);
    let b = largest(&floats);

    let k = black_box(7u64);
    let closure = move |v: u64| v.wrapping_mul(k).wrapping_add(1);
    // black_box hides which closure it is, so the call really goes through
    // the vtable and the closure body keeps its own symbol.
    let f: &dyn Fn(u64) -> u64 = black_box(&closure);
    let c = apply_dyn(f, black_box(3));

    let shapes: Vec<Box<dyn Shape>> = vec![
        Box::new(Circle { r: black_box(1.5) }),
        Box::new(Square { s: black_box(2.0) }),
    ];
    let t = total_area(&shapes);
    let n = inner::deeper::nested_fn(black_box(42));

    println!("rust demo: {} {} {} {:.2} {}", a, b, c, t, n & 0xff);
}
