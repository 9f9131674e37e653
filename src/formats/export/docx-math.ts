/**
 * LaTeX math as native Word equations (Office Math), built from Temml's MathML
 * (math-tree.ts) with the docx library's math objects: fractions, scripts, radicals, n-ary
 * limits. Word and LibreOffice show and edit them as equations; what has no Office Math
 * counterpart here (matrices, accents) is written as its Unicode linear form inside the
 * equation, so nothing is lost.
 */
import {
  Math as OfficeMath,
  MathFraction,
  MathRadical,
  MathRun,
  MathSubScript,
  MathSubSuperScript,
  MathSuperScript,
  type MathComponent,
} from "docx";
import { elements, GROUPS, linearNode, mathTree, SILENT, textOf, type MathNode } from "./math-tree.js";

/** The span as an Office Math object, or undefined when Temml cannot read it. */
export function officeMath(span: string): { display: boolean; math: OfficeMath } | undefined {
  const tree = mathTree(span);
  if (!tree) return undefined;
  return { display: tree.display, math: new OfficeMath({ children: components(tree.root) }) };
}

function components(node: MathNode): MathComponent[] {
  if (SILENT.has(node.tag)) return [];
  if (GROUPS.has(node.tag)) return elements(node).flatMap(components);
  const [a, b, c] = elements(node);
  const part = (child: MathNode | undefined) => (child ? components(child) : []);
  switch (node.tag) {
    case "mi":
    case "mn":
    case "mo":
    case "mtext":
    case "ms": {
      const text = textOf(node);
      return text === "" ? [] : [new MathRun(text)];
    }
    case "mfrac":
      return [new MathFraction({ numerator: part(a), denominator: part(b) })];
    case "msup":
      return [new MathSuperScript({ children: part(a), superScript: part(b) })];
    case "msub":
    case "munder":
      return [new MathSubScript({ children: part(a), subScript: part(b) })];
    case "msubsup":
    case "munderover":
      return [new MathSubSuperScript({ children: part(a), subScript: part(b), superScript: part(c) })];
    case "msqrt":
      return [new MathRadical({ children: elements(node).flatMap(components) })];
    case "mroot":
      return [new MathRadical({ children: part(a), degree: part(b) })];
    default: {
      // No Office Math counterpart built here: the linear form keeps the meaning readable.
      const text = linearNode(node);
      return text === "" ? [] : [new MathRun(text)];
    }
  }
}

